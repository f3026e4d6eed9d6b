//! Integration tests: github_api (see the module's owner for scope).
