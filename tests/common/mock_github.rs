//! A loopback mock GitHub REST API (owned by the REST-client work).
