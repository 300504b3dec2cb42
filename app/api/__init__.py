"""The API server: the FastAPI app, its middleware, health endpoints and the OpenAPI
dump."""
