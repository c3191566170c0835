"""The statuses the memory tools answer with: the model reads them, so they name the outcome."""

from __future__ import annotations

from enum import StrEnum


class SaveStatus(StrEnum):
    SAVED = "memory_saved_successfully"
    PENDING_REVIEW = "memory_saved_pending_review"
    DISABLED = "memory_save_failed_disabled"
    LIMIT_EXCEEDED = "memory_save_failed_limit_exceeded"
    ALREADY_REMEMBERED = "memory_save_failed_already_remembered"
    AMBIGUOUS_USER = "memory_save_failed_ambiguous_user"
    USER_NOT_FOUND = "memory_save_failed_user_not_found"
    PRIVACY_RESTRICTED = "memory_save_failed_privacy_restricted"
    FORGOTTEN = "memory_save_failed_forgotten"
    INTERNAL_ERROR = "memory_save_failed_internal_error"
    DB_ERROR = "memory_save_failed_db_error"
    INVALID_ARGS = "memory_save_failed_invalid_args"
    INVALID_CONTENT = "memory_save_failed_invalid_content"
    INVALID_SCOPE = "memory_save_failed_invalid_scope"


class UpdateStatus(StrEnum):
    UPDATED = "memory_updated_successfully"
    DELETED = "memory_deleted_successfully"
    DISABLED = "memory_update_failed_disabled"
    NOT_FOUND = "memory_update_failed_not_found"
    DUPLICATE = "memory_update_failed_duplicate"
    AMBIGUOUS_USER = "memory_update_failed_ambiguous_user"
    USER_NOT_FOUND = "memory_update_failed_user_not_found"
    PRIVACY_RESTRICTED = "memory_update_failed_privacy_restricted"
    FORGOTTEN = "memory_update_failed_forgotten"
    INTERNAL_ERROR = "memory_update_failed_internal_error"
    DB_ERROR = "memory_update_failed_db_error"
    INVALID_ARGS = "memory_update_failed_invalid_args"
    INVALID_CONTENT = "memory_update_failed_invalid_content"


class SearchStatus(StrEnum):
    FOUND = "memory_search_successful"
    NOTHING_FOUND = "memory_search_successful_no_match"
    INVALID_ARGS = "memory_search_failed_invalid_args"
    UNAVAILABLE = "memory_search_failed_unavailable"
