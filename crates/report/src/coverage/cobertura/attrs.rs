//! The attributes of Cobertura elements: numbers, hit counts and condition coverage, read from
//! the raw values (decoded only when they hold escapes; only the five predefined entities are
//! known). Parsing only; keeps nothing.

use std::borrow::Cow;

use quick_xml::XmlVersion;
use quick_xml::events::BytesStart;
use quick_xml::events::attributes::Attribute;

use super::Problem;
use crate::coverage::tally::Counts;

/// `"50% (1/2)"` → 1 of 2 branches covered.
pub(super) fn conditions(text: &str) -> Option<Counts> {
    let inner = text.split_once('(')?.1.split_once(')')?.0;
    let (covered, total) = inner.split_once('/')?;
    let covered: u64 = covered.trim().parse().ok()?;
    let total: u64 = total.trim().parse().ok()?;
    Some(Counts {
        covered: covered.min(total),
        total,
    })
}

/// What a `<line>` element says.
#[derive(Debug, Default)]
pub(super) struct LineAttrs {
    pub number: Option<u64>,
    pub hits: u64,
    pub branch: bool,
    pub conditions: Option<Counts>,
}

fn parse_number(name: &str, value: &str) -> Result<u64, Problem> {
    value
        .parse()
        .map_err(|_| Problem::Malformed(format!("attribute {name} is not a number: {value:?}")))
}

/// `hits`, read as 0 when negative; floats such as `1.0` are accepted.
fn parse_hits(value: &str) -> Result<u64, Problem> {
    if let Ok(hits) = value.parse::<u64>() {
        return Ok(hits);
    }
    let float = value.parse::<f64>().ok().filter(|f| f.is_finite());
    let integer = value.parse::<i128>().ok().map(|n| n.max(0) as f64);
    integer
        .or(float)
        .map(|n| n.max(0.0) as u64)
        .ok_or_else(|| Problem::Malformed(format!("attribute hits is not a number: {value:?}")))
}

/// The attributes of one element, decoded on demand.
pub(super) struct Attrs<'a, 'b> {
    pub element: &'a BytesStart<'b>,
    pub decoder: quick_xml::Decoder,
}

impl Attrs<'_, '_> {
    pub fn text(&self, name: &str) -> Result<Option<String>, Problem> {
        let attr = self
            .element
            .try_get_attribute(name)
            .map_err(|e| Problem::Malformed(e.to_string()))?;
        let Some(attr) = attr else {
            return Ok(None);
        };
        attr.decoded_and_normalized_value(XmlVersion::Implicit1_0, self.decoder)
            .map(|v| Some(v.into_owned()))
            .map_err(|e| Problem::Malformed(format!("attribute {name}: {e}")))
    }

    pub fn number(&self, name: &str) -> Result<Option<u64>, Problem> {
        self.parsed(name, |v| v.parse::<u64>().ok())
    }

    pub fn rate(&self, name: &str) -> Result<Option<f64>, Problem> {
        self.parsed(name, |v| v.parse::<f64>().ok().filter(|r| r.is_finite()))
    }

    /// The attributes of a `<line>`, read in one pass (this is the hot path of the reader).
    pub fn line(&self) -> Result<LineAttrs, Problem> {
        let mut line = LineAttrs::default();
        for attr in self.element.attributes() {
            let attr = attr.map_err(|e| Problem::Malformed(e.to_string()))?;
            let key = attr.key.local_name();
            if !matches!(
                key.as_ref(),
                b"number" | b"hits" | b"branch" | b"condition-coverage"
            ) {
                continue;
            }
            let value = self.value(&attr)?;
            let value = value.trim();
            match key.as_ref() {
                b"number" => line.number = Some(parse_number("number", value)?),
                b"hits" => line.hits = parse_hits(value)?,
                b"branch" => line.branch = value == "true",
                _ => line.conditions = conditions(value),
            }
        }
        Ok(line)
    }

    /// An attribute's value as text: borrowed when it has no escapes, decoded otherwise.
    fn value<'v>(&self, attr: &'v Attribute<'_>) -> Result<Cow<'v, str>, Problem> {
        let invalid = || Problem::Malformed("attribute value is not UTF-8".into());
        if !attr.value.contains(&b'&') {
            return std::str::from_utf8(&attr.value)
                .map(Cow::Borrowed)
                .map_err(|_| invalid());
        }
        attr.decoded_and_normalized_value(XmlVersion::Implicit1_0, self.decoder)
            .map(|v| Cow::Owned(v.into_owned()))
            .map_err(|e| Problem::Malformed(format!("attribute value: {e}")))
    }

    fn parsed<T>(
        &self,
        name: &str,
        parse: impl Fn(&str) -> Option<T>,
    ) -> Result<Option<T>, Problem> {
        let Some(value) = self.text(name)? else {
            return Ok(None);
        };
        let value = value.trim();
        if value.is_empty() {
            return Ok(None);
        }
        parse(value).map(Some).ok_or_else(|| {
            Problem::Malformed(format!("attribute {name} is not a number: {value:?}"))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn condition_coverage_is_parsed() {
        assert_eq!(
            conditions("50% (1/2)"),
            Some(Counts {
                covered: 1,
                total: 2
            })
        );
        assert_eq!(conditions("100%"), None);
    }
}
