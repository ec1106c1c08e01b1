"""The data every stage passes on: the request (what the user asks for), the Plan and the engine settings."""
