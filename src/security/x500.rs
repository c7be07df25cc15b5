//! A client certificate's subject as the principal name Kafka gives it: the RFC 2253
//! string of the subject distinguished name, exactly as Java's
//! `X500Principal.getName()` writes it (what Kafka's `DefaultKafkaPrincipalBuilder`
//! passes through `ssl.principal.mapping.rules=DEFAULT`), e.g.
//! `CN=alice,OU=eng,O=acme`.
//!
//! Java's format, followed here:
//!
//! | part | written as |
//! | --- | --- |
//! | RDN order | last RDN of the certificate's sequence first, joined by `,` |
//! | multi-valued RDN | its attributes in encoded order, joined by `+` |
//! | attribute type | `CN`, `C`, `L`, `ST`, `O`, `OU`, `STREET`, `DC`, `UID` (RFC 2253's keywords); any other as its dotted OID |
//! | value, keyword type, string tag (UTF8, Printable, IA5, T61, BMP, General) | the text, with `, = + < > # ; " \` escaped by `\`, NUL as `\00`, leading and trailing spaces escaped |
//! | value, OID type or another tag | `#` and the lower-case hex of the value's DER encoding (tag, length, content) |

use x509_parser::prelude::{FromDer, X509Certificate};
use x509_parser::x509::{AttributeTypeAndValue, X509Name};

/// The RFC 2253 name of the subject of the DER certificate `der` (the leaf a client
/// presented); `None` when it does not parse (rustls verified it already, so only a
/// certificate x509-parser cannot read).
pub fn subject_rfc2253(der: &[u8]) -> Option<String> {
    let (_, cert) = X509Certificate::from_der(der).ok()?;
    Some(rfc2253(cert.subject()))
}

/// `name` in Java's RFC 2253 form (see the module table).
pub fn rfc2253(name: &X509Name<'_>) -> String {
    let rdns: Vec<String> =
        name.iter().map(|rdn| rdn.iter().map(attribute).collect::<Vec<_>>().join("+")).collect();
    rdns.into_iter().rev().collect::<Vec<_>>().join(",")
}

/// RFC 2253's attribute type keywords and their OIDs (Java's `AVAKeyword`s marked
/// RFC 2253 compliant).
const KEYWORDS: [(&str, &str); 9] = [
    ("2.5.4.3", "CN"),
    ("2.5.4.6", "C"),
    ("2.5.4.7", "L"),
    ("2.5.4.8", "ST"),
    ("2.5.4.10", "O"),
    ("2.5.4.11", "OU"),
    ("2.5.4.9", "STREET"),
    ("0.9.2342.19200300.100.1.25", "DC"),
    ("0.9.2342.19200300.100.1.1", "UID"),
];

/// One `type=value`.
fn attribute(ava: &AttributeTypeAndValue<'_>) -> String {
    let oid = ava.attr_type().to_id_string();
    let keyword = KEYWORDS.iter().find(|(o, _)| *o == oid).map(|(_, k)| *k);
    let value = ava.attr_value();
    let text = keyword.and_then(|_| decode_string(value.tag().0, value.data));
    match (keyword, text) {
        (Some(k), Some(text)) => format!("{k}={}", escape(&text)),
        (k, _) => {
            let der = der_encoding(value);
            let hex: String = der.iter().map(|b| format!("{b:02x}")).collect();
            format!("{}=#{hex}", k.map_or(oid, str::to_string))
        }
    }
}

/// The text of a string value with universal tag number `tag`, for the string types
/// Java writes as text; `None` for any other tag (written in hex).
fn decode_string(tag: u32, data: &[u8]) -> Option<String> {
    const UTF8: u32 = 12;
    const PRINTABLE: u32 = 19;
    const T61: u32 = 20;
    const IA5: u32 = 22;
    const GENERAL: u32 = 27;
    const BMP: u32 = 30;
    match tag {
        UTF8 | PRINTABLE | IA5 | GENERAL => Some(String::from_utf8_lossy(data).into_owned()),
        // Java reads T61String as ISO-8859-1.
        T61 => Some(data.iter().map(|&b| b as char).collect()),
        BMP => {
            let units: Vec<u16> = data
                .chunks(2)
                .map(|c| u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]))
                .collect();
            Some(String::from_utf16_lossy(&units))
        }
        _ => None,
    }
}

/// Escapes a value's text as Java's `AVA.toRFC2253String` does.
fn escape(text: &str) -> String {
    const ESCAPEES: &str = ",=+<>#;\"\\";
    let mut escaped: Vec<char> = Vec::with_capacity(text.len());
    for c in text.chars() {
        if ESCAPEES.contains(c) {
            escaped.extend(['\\', c]);
        } else if c == '\0' {
            escaped.extend(['\\', '0', '0']);
        } else {
            escaped.push(c);
        }
    }
    let blank = |c: &char| *c == ' ' || *c == '\r';
    let lead = escaped.iter().take_while(|c| blank(c)).count();
    let trail = escaped.iter().rev().take_while(|c| blank(c)).count();
    let mut out = String::with_capacity(escaped.len() + lead + trail);
    for (i, c) in escaped.iter().enumerate() {
        if i < lead || i >= escaped.len().saturating_sub(trail) {
            out.push('\\');
        }
        out.push(*c);
    }
    out
}

/// The DER encoding of `value`: identifier octets, definite length, content.
fn der_encoding(value: &x509_parser::der_parser::asn1_rs::Any<'_>) -> Vec<u8> {
    let header = &value.header;
    let class = (header.class() as u8) << 6;
    let constructed = if header.is_constructed() { 0x20 } else { 0 };
    let tag = header.tag().0;
    let mut out = Vec::with_capacity(value.data.len() + 8);
    if tag < 31 {
        out.push(class | constructed | tag as u8);
    } else {
        out.push(class | constructed | 0x1f);
        let mut groups = Vec::new();
        let mut t = tag;
        loop {
            groups.push((t & 0x7f) as u8);
            t >>= 7;
            if t == 0 {
                break;
            }
        }
        for (i, g) in groups.iter().rev().enumerate() {
            out.push(if i + 1 < groups.len() { g | 0x80 } else { *g });
        }
    }
    let len = value.data.len();
    if len < 0x80 {
        out.push(len as u8);
    } else {
        let bytes: Vec<u8> = len.to_be_bytes().iter().copied().skip_while(|&b| b == 0).collect();
        out.push(0x80 | bytes.len() as u8);
        out.extend_from_slice(&bytes);
    }
    out.extend_from_slice(value.data);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A certificate made by `openssl req -multivalue-rdn -subj '/C=US/ST=Some;State/O=acme,
    /// inc/OU=eng+UID=u1/CN= alice #1\=x<y> /emailAddress=a@b.c/DC=com/serialNumber=42'`;
    /// the expected name is what Java 17's `X500Principal.getName()` printed for it.
    #[test]
    fn subject_is_written_as_java_writes_rfc2253() {
        let der = include_bytes!("testdata/tricky-subject.der");
        assert_eq!(
            subject_rfc2253(der).unwrap(),
            "2.5.4.5=#13023432,DC=com,1.2.840.113549.1.9.1=#16056140622e63,\
             CN=\\ alice \\#1\\=x\\<y\\>\\ ,OU=eng+UID=u1,O=acme\\, inc,ST=Some\\;State,C=US"
        );
    }

    #[test]
    fn escapes_specials_and_outer_spaces() {
        assert_eq!(escape("alice"), "alice");
        assert_eq!(escape("a,b+c"), "a\\,b\\+c");
        assert_eq!(escape("  x y "), "\\ \\ x y\\ ");
        assert_eq!(escape("q\"\\;<>#="), "q\\\"\\\\\\;\\<\\>\\#\\=");
        assert_eq!(escape("nul\0"), "nul\\00");
        assert_eq!(escape("   "), "\\ \\ \\ ");
    }

    #[test]
    fn not_a_certificate_has_no_subject() {
        assert_eq!(subject_rfc2253(b"not DER"), None);
    }
}
