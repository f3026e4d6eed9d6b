//! Integration tests: github (see the module's owner for scope).
