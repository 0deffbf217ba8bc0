//! RFC 6570 URI templates, as a resource template's screen fills them in: which variables a
//! template has, and the URI it gives with their values.

/// The variables of an RFC 6570 URI template, in order (`{a,b}`, `{+path}`, `{?q*}`), each
/// with whether the URI needs it: those of the path do, query and fragment ones
/// (`{?q}`, `{&q}`, `{#f}`, `{;p}`) may be left out.
pub(crate) fn template_variables(template: &str) -> Vec<(String, bool)> {
    let mut names: Vec<(String, bool)> = Vec::new();
    for expression in expressions(template) {
        let (op, list) = operator(expression);
        let needed = !matches!(op, Some('?' | '&' | '#' | ';'));
        for name in list.split(',').map(variable_name) {
            match names.iter_mut().find(|(n, _)| n == name) {
                Some((_, required)) => *required |= needed,
                None if !name.is_empty() => names.push((name.to_string(), needed)),
                None => {}
            }
        }
    }
    names
}

/// The text inside each `{...}` of a template.
fn expressions(template: &str) -> impl Iterator<Item = &str> {
    template
        .split('{')
        .skip(1)
        .filter_map(|part| part.split_once('}').map(|(e, _)| e))
}

fn operator(expression: &str) -> (Option<char>, &str) {
    match expression.chars().next() {
        Some(c @ ('+' | '#' | '.' | '/' | ';' | '?' | '&')) => (Some(c), &expression[1..]),
        _ => (None, expression),
    }
}

/// A variable's name without its modifier (`*`, `:3`).
fn variable_name(spec: &str) -> &str {
    spec.trim_end_matches('*')
        .split(':')
        .next()
        .unwrap_or("")
        .trim()
}

/// `value` percent-encoded: all but the unreserved characters, and with `reserved` the
/// reserved ones and existing `%XX` kept too.
fn encode(value: &str, reserved: bool) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        let keep = c.is_ascii_alphanumeric()
            || "-._~".contains(c)
            || (reserved && ":/?#[]@!$&'()*+,;=%".contains(c));
        if keep {
            out.push(c);
        } else {
            let mut bytes = [0; 4];
            for b in c.encode_utf8(&mut bytes).bytes() {
                out.push_str(&format!("%{b:02X}"));
            }
        }
    }
    out
}

/// A URI template filled in with `values` (RFC 6570 levels 1 to 3; an empty value counts as
/// undefined, a `:n` prefix is applied).
pub(crate) fn expand_template(template: &str, values: &[(String, String)]) -> String {
    let mut out = String::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        let Some(close) = rest[open..].find('}').map(|c| open + c) else {
            break;
        };
        out.push_str(&rest[..open]);
        let (op, list) = operator(&rest[open + 1..close]);
        // First character, separator, named, reserved kept (RFC 6570 appendix A).
        let (first, sep, named, reserved) = match op {
            None => ("", ",", false, false),
            Some('+') => ("", ",", false, true),
            Some('#') => ("#", ",", false, true),
            Some('.') => (".", ".", false, false),
            Some('/') => ("/", "/", false, false),
            Some(';') => (";", ";", true, false),
            Some('?') => ("?", "&", true, false),
            _ => ("&", "&", true, false),
        };
        let parts: Vec<String> = list
            .split(',')
            .filter_map(|spec| {
                let name = variable_name(spec);
                let value = values.iter().find(|(n, _)| n == name)?.1.as_str();
                if value.is_empty() {
                    return None;
                }
                let prefix = spec
                    .split_once(':')
                    .and_then(|(_, n)| n.trim().parse::<usize>().ok());
                let value: String = match prefix {
                    Some(n) => value.chars().take(n).collect(),
                    None => value.to_string(),
                };
                let value = encode(&value, reserved);
                Some(if named {
                    format!("{name}={value}")
                } else {
                    value
                })
            })
            .collect();
        if !parts.is_empty() {
            out.push_str(first);
            out.push_str(&parts.join(sep));
        }
        rest = &rest[close + 1..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_are_expanded_as_rfc_6570_says() {
        let names = template_variables("fixture://big/{bytes}{?q,lang*}{+path:3}{#q}{bytes}");
        let want = [
            ("bytes", true),
            ("q", false),
            ("lang", false),
            ("path", true),
        ];
        let want: Vec<(String, bool)> = want.iter().map(|(n, r)| (n.to_string(), *r)).collect();
        assert_eq!(names, want);
        let values = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        let v = values(&[
            ("var", "value"),
            ("hello", "Hello World!"),
            ("path", "/foo/bar"),
            ("x", "1024"),
            ("y", "768"),
            ("empty", ""),
        ]);
        for (template, want) in [
            ("{var}", "value"),
            ("{hello}", "Hello%20World%21"),
            ("{+hello}", "Hello%20World!"),
            ("{+path}/here", "/foo/bar/here"),
            ("{#path}", "#/foo/bar"),
            ("X{.var}", "X.value"),
            ("{/var,x}/here", "/value/1024/here"),
            ("{;x,y,empty}", ";x=1024;y=768"),
            ("{?x,y}", "?x=1024&y=768"),
            ("?fixed=yes{&x}", "?fixed=yes&x=1024"),
            ("{var:3}", "val"),
            ("note://topics/{empty}", "note://topics/"),
            ("a{unclosed", "a{unclosed"),
            ("{x}é{y}", "1024é768"),
        ] {
            assert_eq!(expand_template(template, &v), want, "{template}");
        }
    }
}
