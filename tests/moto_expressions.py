"""moto's DynamoDB expressions parsed once per test process, not once per request.

kioku's expressions are a few fixed strings (only their values vary), yet moto parses each anew for
every request, twice for a condition (once to check the request, once to apply it): about a third
of a moto-backed turn's CPU. The answers stay moto's own:

- An update expression's syntax tree is kept by its text. Nothing changes a parsed tree in place:
  the validator works on a copy (``Validator.__init__``), the rest only reads it. That copy is made
  by unpickling the tree pickled once, the same tree as ``deepcopy`` makes, faster.
- The three checks of an update that read only the expression, its attribute names and the table's
  keys (one clause of each kind, no overlapping paths, no key updated) are run once for each such
  combination that passed; those that depend on the values or the item run every time.
- A condition (or filter) expression's parse is kept by its text, names and values (the same words
  and values are the same condition: nine parses in ten are such repeats), with the names and
  values moto reports it used. Its values are copied first, so the kept parse holds no value a
  later request or item could change.

A request moto refuses is refused as before: a parse or check that raises is kept by nothing.

Two lookups moto makes anew that answer the same for a class every time are kept by class: the
node kinds a tree walker processes (asked at every node of every walk, a dict built each time) and
the method names of a response class (``inspect.getmembers``, for every request of any service).
"""

from __future__ import annotations

import copy
import functools
import pickle
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any

from moto.core import responses as moto_responses
from moto.dynamodb import comparisons
from moto.dynamodb.parsing import expressions, validators
from moto.dynamodb.parsing.ast_nodes import DepthFirstTraverser, Node

KEPT = 4096
"""Entries each cache keeps (the most recently used): a test's expressions, not the whole run's."""


class _Recent:
    """The most recently used entries, at most ``KEPT``; in-process moto may serve several threads."""

    def __init__(self) -> None:
        self._entries: OrderedDict[Hashable, Any] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> Any:
        with self._lock:
            value = self._entries.get(key)
            if value is not None:
                self._entries.move_to_end(key)
            return value

    def keep(self, key: Hashable, value: Any) -> Any:
        with self._lock:
            self._entries[key] = value
            if len(self._entries) > KEPT:
                self._entries.popitem(last=False)
        return value


_TREES = _Recent()  # update expression text -> its tree
_PICKLED: weakref.WeakKeyDictionary[Any, bytes] = weakref.WeakKeyDictionary()  # a kept tree, pickled
_CHECKED = _Recent()  # (tree, names, table keys) whose name-only checks passed
_CONDITIONS = _Recent()  # (text, names, values) -> (parse, names used, values used)
_NAME_ONLY_CHECKS = (
    validators.ActionCountValidator,
    validators.OverlappingPathsValidator,
    validators.UpdateHashRangeKeyValidator,
)


def _update_tree(make: Callable[[str], Any]) -> Callable[[Any, str], Any]:
    def make_once(cls: Any, expression: str) -> Any:
        tree = _TREES.get(expression)
        if tree is None:
            tree = make(expression)
            _PICKLED[tree] = pickle.dumps(tree)
            _TREES.keep(expression, tree)
        return tree

    return make_once


def _copy_tree(tree: Any, memo: Any = None) -> Any:
    """The validator's copy of a tree: a kept tree from its pickle, any other as ``deepcopy`` does."""
    pickled = _PICKLED.get(tree) if isinstance(tree, Node) else None  # (a value hashes its contents)
    return pickle.loads(pickled) if pickled is not None else copy.deepcopy(tree, memo)


def _validator_init(init: Callable[..., None]) -> Callable[..., None]:
    def remember_key(
        self: Any, expression: Any, expression_attribute_names: Any, *args: Any, **kwargs: Any
    ) -> None:
        table = kwargs.get("table", args[-1] if args else None)
        self.kioku_checked = (expression, repr(expression_attribute_names), repr(table.table_key_attrs))
        init(self, expression, expression_attribute_names, *args, **kwargs)

    return remember_key


def _processors(get: Callable[[Any], list[Any]]) -> Callable[[Any], list[Any]]:
    def unchecked_only(self: Any) -> list[Any]:
        processors = get(self)
        if _CHECKED.get(self.kioku_checked) is None:
            return processors
        return [p for p in processors if not isinstance(p, _NAME_ONLY_CHECKS)]

    return unchecked_only


def _validate(validate: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def validate_and_remember(self: Any) -> Any:
        result = validate(self)
        _CHECKED.keep(self.kioku_checked, True)
        return result

    return validate_and_remember


def _condition(parse: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def parse_once(self: Any) -> Any:
        names, values = self.expression_attribute_names, self.expression_attribute_values
        key = (self.condition_expression, repr(names), repr(values))
        kept = _CONDITIONS.get(key)
        if kept is None:
            private = comparisons.ConditionExpressionParser(
                self.condition_expression, copy.deepcopy(names), copy.deepcopy(values)
            )
            parsed = parse(private)
            kept = _CONDITIONS.keep(
                key, (parsed, tuple(private.expr_attr_names_found), tuple(private.expr_attr_values_found))
            )
        self.expr_attr_names_found.extend(kept[1])
        self.expr_attr_values_found.extend(kept[2])
        return kept[0]

    return parse_once


def _by_class(lookup: Callable[[Any], Any]) -> Callable[[Any], Any]:
    found: dict[type, Any] = {}

    def once_a_class(self: Any) -> Any:
        kind = type(self)
        if kind not in found:
            found[kind] = lookup(self)
        return found[kind]

    return once_a_class


def parse_expressions_once() -> None:
    DepthFirstTraverser.nodes_to_be_processed = _by_class(DepthFirstTraverser.nodes_to_be_processed)
    moto_responses.method_names_from_class = functools.cache(moto_responses.method_names_from_class)
    parser = expressions.UpdateExpressionParser
    parser.make = classmethod(_update_tree(parser.make))
    validators.deepcopy = _copy_tree
    validator = validators.UpdateExpressionValidator
    validator.__init__ = _validator_init(validator.__init__)
    validator.get_ast_processors = _processors(validator.get_ast_processors)
    validator.validate = _validate(validator.validate)
    condition = comparisons.ConditionExpressionParser
    condition.parse = _condition(condition.parse)
