//! Integration tests: planning (see the module's owner for scope).
