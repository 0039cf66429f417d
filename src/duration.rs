//! Durations on the command line, written like Go's `time.ParseDuration` (`10s`, `1m30s`, `500ms`).

use std::time::Duration;

/// Parses a non-negative Go-style duration: a sequence of `<number><unit>` with units
/// `ms`, `s`, `m`, `h` (decimals allowed, e.g. `1.5s`); `0` alone is zero.
pub(crate) fn parse_duration(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    if t == "0" {
        return Ok(Duration::ZERO);
    }
    if t.is_empty() {
        return Err("empty duration: write e.g. 10s, 500ms, 1m30s".into());
    }
    let mut total = 0f64;
    let mut rest = t;
    while !rest.is_empty() {
        let number_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let (number, after) = rest.split_at(number_len);
        let unit_len = after
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(after.len());
        let (unit, next) = after.split_at(unit_len);
        let value: f64 = number
            .parse()
            .map_err(|_| format!("invalid duration {text:?}: write e.g. 10s, 500ms, 1m30s"))?;
        let scale = match unit {
            "ms" => 0.001,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            "" => {
                return Err(format!(
                    "invalid duration {text:?}: missing unit (ms, s, m, h)"
                ));
            }
            other => {
                return Err(format!(
                    "invalid duration {text:?}: unknown unit {other:?} (ms, s, m, h)"
                ));
            }
        };
        total += value * scale;
        rest = next;
    }
    Duration::try_from_secs_f64(total).map_err(|e| format!("invalid duration {text:?}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_style_durations() {
        assert_eq!(parse_duration("60s"), Ok(Duration::from_secs(60)));
        assert_eq!(parse_duration("1m30s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("0"), Ok(Duration::ZERO));
        assert!(parse_duration("10").unwrap_err().contains("missing unit"));
        assert!(
            parse_duration("5d")
                .unwrap_err()
                .contains("unknown unit \"d\"")
        );
        assert!(parse_duration("").is_err());
    }
}
