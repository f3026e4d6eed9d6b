//! Reading GitHub's answers within bounds: whole bodies refused past a cap, a log's tail kept
//! in bounded memory, JSON decoded into the typed values (pages of lists by octocrab's
//! `Page`), and artifact archives unzipped in
//! memory with a cap on the unpacked size (zip bombs) and escaping paths skipped. Nothing here
//! sends a request.

use std::io::{Cursor, Read};

use reqwest::Response;
use reqwest::header::HeaderMap;
use serde::de::DeserializeOwned;

use super::failure::body_error;
use crate::api::GitHubError;

/// A file's text from a `contents` answer (`{"type": "file", "encoding": "base64", "content":
/// "..."}`, the base64 broken into lines), refused past `cap` bytes or when it is not a file's
/// UTF-8 text.
pub(super) fn file_content(bytes: &[u8], cap: usize, what: &str) -> Result<String, GitHubError> {
    use base64::Engine as _;
    #[derive(serde::Deserialize)]
    struct Contents {
        #[serde(rename = "type")]
        kind: String,
        #[serde(default)]
        encoding: Option<String>,
        #[serde(default)]
        content: Option<String>,
    }
    let refuse = |message: String| GitHubError::Decode {
        what: what.to_owned(),
        message,
    };
    let contents: Contents = decode(bytes, what)?;
    if contents.kind != "file" || contents.encoding.as_deref() != Some("base64") {
        return Err(refuse(format!(
            "not a file's base64 content (type {}, encoding {:?})",
            contents.kind, contents.encoding
        )));
    }
    let packed: String = contents
        .content
        .unwrap_or_default()
        .chars()
        .filter(|c| !c.is_ascii_whitespace())
        .collect();
    let raw = base64::engine::general_purpose::STANDARD
        .decode(packed)
        .map_err(|error| refuse(format!("invalid base64: {error}")))?;
    if raw.len() > cap {
        return Err(refuse(format!("larger than {cap} bytes")));
    }
    String::from_utf8(raw).map_err(|_| refuse("not UTF-8 text".to_owned()))
}

/// The whole body, refused past `cap` bytes.
pub(super) async fn read_capped(
    mut response: Response,
    cap: usize,
    what: &str,
) -> Result<Vec<u8>, GitHubError> {
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|error| body_error(what, &error))?
    {
        if body.len().saturating_add(chunk.len()) > cap {
            return Err(GitHubError::Decode {
                what: what.to_owned(),
                message: format!("the answer is larger than {cap} bytes"),
            });
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// The last `cap` bytes of the body as text (lossy UTF-8; a character cut at the start is
/// dropped).
pub(super) async fn read_tail(
    mut response: Response,
    cap: usize,
    what: &str,
) -> Result<String, GitHubError> {
    let slack = cap.max(64 << 10);
    let mut kept = Vec::new();
    let mut cut = false;
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|error| body_error(what, &error))?
    {
        kept.extend_from_slice(&chunk);
        if kept.len() > cap.saturating_add(slack) {
            kept.drain(..kept.len() - cap);
            cut = true;
        }
    }
    if kept.len() > cap {
        kept.drain(..kept.len() - cap);
        cut = true;
    }
    let start = if cut {
        kept.iter()
            .take(3)
            .take_while(|byte| **byte & 0xC0 == 0x80)
            .count()
    } else {
        0
    };
    Ok(String::from_utf8_lossy(&kept[start..]).into_owned())
}

pub(super) fn decode<T: DeserializeOwned>(bytes: &[u8], what: &str) -> Result<T, GitHubError> {
    serde_json::from_slice(bytes).map_err(|error| GitHubError::Decode {
        what: what.to_owned(),
        message: error.to_string(),
    })
}

/// One page of a list as octocrab reads it ([`octocrab::Page`]): the items (a bare array, or
/// the list inside `{"total_count": n, "jobs": [...]}`) and the `Link` header's neighbours.
/// The body was already read, within its cap.
pub(super) async fn page<T: DeserializeOwned>(
    headers: HeaderMap,
    body: Vec<u8>,
    what: &str,
) -> Result<octocrab::Page<T>, GitHubError> {
    use http_body_util::BodyExt;
    use octocrab::FromResponse;
    let body = http_body_util::Full::new(bytes::Bytes::from(body))
        .map_err(|never: std::convert::Infallible| -> octocrab::Error { match never {} });
    let mut response = http::Response::new(body);
    *response.headers_mut() = headers;
    octocrab::Page::<T>::from_response(response)
        .await
        .map_err(|error| GitHubError::Decode {
            what: what.to_owned(),
            message: error.to_string(),
        })
}

/// The regular files of a zip archive, refusing more than `cap` bytes unpacked; entries with an
/// absolute path or a `..` component are skipped, as are directories and symbolic links.
pub fn unzip(zipped: &[u8], cap: usize, what: &str) -> Result<Vec<(String, Vec<u8>)>, GitHubError> {
    let broken = |message: String| GitHubError::Decode {
        what: what.to_owned(),
        message,
    };
    let too_big = || broken(format!("the archive unpacks to more than {cap} bytes"));
    let mut archive = zip::ZipArchive::new(Cursor::new(zipped))
        .map_err(|error| broken(format!("not a zip archive: {error}")))?;
    let mut files = Vec::new();
    let mut total: u64 = 0;
    for index in 0..archive.len() {
        let entry = archive
            .by_index(index)
            .map_err(|error| broken(format!("entry {index}: {error}")))?;
        let Some(name) = safe_entry_name(&entry) else {
            continue;
        };
        let room = (cap as u64).saturating_sub(total);
        if entry.size() > room {
            return Err(too_big());
        }
        let mut contents = Vec::new();
        entry
            .take(room.saturating_add(1))
            .read_to_end(&mut contents)
            .map_err(|error| broken(format!("{name}: {error}")))?;
        total = total.saturating_add(contents.len() as u64);
        if contents.len() as u64 > room {
            return Err(too_big());
        }
        files.push((name, contents));
    }
    Ok(files)
}

fn safe_entry_name<R: Read>(entry: &zip::read::ZipFile<'_, R>) -> Option<String> {
    if !entry.is_file() {
        return None;
    }
    entry.enclosed_name()?;
    let name = entry.name().ok()?.into_owned();
    let absolute = name.starts_with(['/', '\\']) || name.get(1..2) == Some(":");
    let climbs = name.split(['/', '\\']).any(|part| part == "..");
    (!absolute && !climbs).then_some(name)
}
