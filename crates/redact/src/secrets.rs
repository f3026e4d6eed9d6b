//! What a secret is, by a variable's name or its value: the one rule the redactor (which holds
//! them back from every text that leaves) and the child environment (which never passes them
//! on) share. Pure functions.

/// True when a variable name looks like it holds a secret or a path that lets a child write to
/// the CI runner (GitHub's `GITHUB_ENV`, `GITHUB_OUTPUT`, ...). Case-insensitive.
pub fn is_secret_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    const EXACT: &[&str] = &[
        "GITHUB_TOKEN",
        "GH_TOKEN",
        "GH_ENTERPRISE_TOKEN",
        "GITHUB_PAT",
        "GITHUB_ENV",
        "GITHUB_OUTPUT",
        "GITHUB_PATH",
        "GITHUB_STATE",
        "GITHUB_STEP_SUMMARY",
        "NPM_TOKEN",
        "NODE_AUTH_TOKEN",
        "CARGO_REGISTRY_TOKEN",
        "PYPI_TOKEN",
        "TWINE_PASSWORD",
        "AWS_ACCESS_KEY_ID",
        "DOCKER_AUTH_CONFIG",
        "SSH_AUTH_SOCK",
        "GIT_ASKPASS",
        "SSH_ASKPASS",
        "META_AGENT_DATABASE_URL",
        "DATABASE_URL",
    ];
    const PREFIXES: &[&str] = &[
        "ACTIONS_",
        "ACTIONS_ID_TOKEN_REQUEST_",
        "RUNNER_TOKEN",
        "GIT_CONFIG_",
    ];
    const MARKERS: &[&str] = &[
        "TOKEN",
        "SECRET",
        "PASSWORD",
        "PASSWD",
        "API_KEY",
        "APIKEY",
        "PRIVATE_KEY",
        "CREDENTIAL",
        "ACCESS_KEY",
        "AUTH",
    ];
    // OpenTelemetry's exporter headers (`OTEL_EXPORTER_OTLP_HEADERS`, `..._TRACES_HEADERS`, ...)
    // carry the collector's credentials.
    let otlp_headers = upper.starts_with("OTEL_EXPORTER_OTLP_") && upper.ends_with("HEADERS");
    EXACT.contains(&upper.as_str())
        || otlp_headers
        || PREFIXES.iter().any(|prefix| upper.starts_with(prefix))
        || MARKERS.iter().any(|marker| upper.contains(marker))
}

/// True when a variable's value carries a credential whatever its name: a URL with a password
/// or a token in its userinfo (`https://user:password@index/simple`, `https://token@host`; see
/// [`url_credential`]) or a token of a known shape. Such a variable is a secret: never passed to
/// a child, redacted everywhere.
pub fn carries_credential(value: &str) -> bool {
    url_credential(value).is_some() || !super::patterns::find(value).is_empty()
}

/// Shortest user name that is taken for a token when a URL's userinfo has no password.
const TOKEN_USER_CHARS: usize = 32;

/// The credential in a URL's userinfo: the password of `user:password`, or a user name that is a
/// token (`https://ghp_...@host`: a known token shape, or `TOKEN_USER_CHARS` characters or
/// more). A plain user name (`postgresql://meta_agent@host/db`) is not a credential: taking it
/// for one would redact every occurrence of an ordinary word.
pub fn url_credential(value: &str) -> Option<&str> {
    let userinfo = url_userinfo(value)?;
    match userinfo.split_once(':') {
        Some((_, password)) => (!password.is_empty()).then_some(password),
        None => {
            let token = userinfo.chars().count() >= TOKEN_USER_CHARS
                || !super::patterns::find(userinfo).is_empty();
            token.then_some(userinfo)
        }
    }
}

/// The userinfo part of every URL in `value` (`user:password` of `scheme://user:password@host`).
pub fn url_userinfo(value: &str) -> Option<&str> {
    let (_, rest) = value.split_once("://")?;
    let authority = rest.split(['/', '?', '#', ' ']).next()?;
    let (userinfo, _) = authority.rsplit_once('@')?;
    (!userinfo.is_empty()).then_some(userinfo)
}

/// A secret variable: by its name ([`is_secret_name`]) or by its value ([`carries_credential`]).
pub fn is_secret_var(name: &str, value: &str) -> bool {
    is_secret_name(name) || carries_credential(value)
}

/// An OTLP headers list (`OTEL_EXPORTER_OTLP_HEADERS`, whose values are the collector's
/// credentials): `key=value` pairs separated by commas (W3C baggage style, values
/// percent-decoded); the error is the 1-based number of the first bad entry. Empty entries are
/// ignored.
pub fn parse_headers(text: &str) -> Result<Vec<(String, String)>, usize> {
    let mut headers = Vec::new();
    for (index, entry) in text.split(',').enumerate() {
        if entry.trim().is_empty() {
            continue;
        }
        let (name, value) = entry.split_once('=').ok_or(index + 1)?;
        let name = name.trim();
        let value = percent_encoding::percent_decode_str(value.trim())
            .decode_utf8()
            .map_err(|_| index + 1)?;
        let valid_name = !name.is_empty()
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
        let valid_value = value
            .bytes()
            .all(|b| b == b'\t' || (b' '..=b'~').contains(&b));
        if !valid_name || !valid_value {
            return Err(index + 1);
        }
        headers.push((name.to_ascii_lowercase(), value.into_owned()));
    }
    Ok(headers)
}
