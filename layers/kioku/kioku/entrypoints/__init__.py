"""Entry-point glue shared by the Lambda handlers: Function URL events in, responses out."""
