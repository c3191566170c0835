"""Adapters to the outside world: DynamoDB, SQS, Discord REST, LLM endpoints."""
