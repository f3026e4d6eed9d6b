//! The real [`super::api::GitHubApi`] over reqwest (rustls): owned by the REST-client work.
