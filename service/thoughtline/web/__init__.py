"""The HTTP shell: the Starlette app, request guards, the bearer door, protocol eras, Lambda."""
