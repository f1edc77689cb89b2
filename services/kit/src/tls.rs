//! The hall's own certificate authority and its hosts' certificates (`boardcast tls-certs`).
//!
//! A hall's machines have names on the venue network but none a public authority will certify,
//! so the hall makes its own: one authority (`ca.pem`, its key `ca.key` kept by whoever makes
//! certificates), and per host a certificate for its names and addresses (`<host>.pem`,
//! `<host>.key`) that NATS (clients and routes), gRPC and the dashboard serve with. Every program
//! trusts `ca.pem` only. A host certificate is good for client authentication too: NATS routes
//! verify each other's (mutual TLS), so only the hall's servers join the cluster.

use std::{
    net::IpAddr,
    path::{Path, PathBuf},
    str::FromStr,
};

use anyhow::{Context as _, bail};
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose, SanType,
};

/// The authority's certificate, in the certificates' directory.
pub const CA_CERT_FILE: &str = "ca.pem";
/// The authority's private key: only on the machine that makes certificates.
pub const CA_KEY_FILE: &str = "ca.key";

/// How long the authority is valid.
const CA_DAYS: i64 = 10 * 365;

/// A host to certify: its name and the addresses it is reached at.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Host {
    pub name: String,
    pub addresses: Vec<IpAddr>,
}

impl FromStr for Host {
    type Err = anyhow::Error;

    /// `NAME` or `NAME=ADDRESS,ADDRESS,…`.
    fn from_str(s: &str) -> anyhow::Result<Host> {
        let (name, addresses) = match s.split_once('=') {
            Some((name, addresses)) => (name.trim(), addresses),
            None => (s.trim(), ""),
        };
        let valid_name = !name.is_empty()
            && name.len() <= 253
            && name.split('.').all(|label| {
                !label.is_empty()
                    && label.len() <= 63
                    && label
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'-')
                    && !label.starts_with('-')
                    && !label.ends_with('-')
            });
        if !valid_name {
            bail!("{name:?} is not a host name (letters, digits and '-', dot-separated)");
        }
        if name.eq_ignore_ascii_case("ca") {
            bail!("a host may not be called \"ca\": its files would replace the authority's");
        }
        let addresses = addresses
            .split(',')
            .map(str::trim)
            .filter(|a| !a.is_empty())
            .map(|a| {
                a.parse()
                    .with_context(|| format!("{a:?} is not an IP address (for host {name})"))
            })
            .collect::<anyhow::Result<_>>()?;
        Ok(Host {
            name: name.to_ascii_lowercase(),
            addresses,
        })
    }
}

/// What [`make_certificates`] wrote.
#[derive(Debug)]
pub struct Written {
    /// Whether the authority was made now (rather than an existing one used).
    pub new_authority: bool,
    /// Per host: its certificate and key.
    pub hosts: Vec<(PathBuf, PathBuf)>,
}

/// Makes a certificate for each host, signed by the authority in `dir` (made there first when
/// it has none). Host certificates are valid for `days`; each names the host, its addresses,
/// `localhost` and the loopback addresses (a host's programs reach their neighbours there).
pub fn make_certificates(dir: &Path, hosts: &[Host], days: u32) -> anyhow::Result<Written> {
    if hosts.is_empty() {
        bail!("name at least one host to certify (--host NAME=ADDRESS)");
    }
    if !(1..=3650).contains(&days) {
        bail!("a host certificate is valid for 1 to 3650 days, not {days}");
    }
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let (ca_cert, ca_key) = (dir.join(CA_CERT_FILE), dir.join(CA_KEY_FILE));
    let new_authority = !ca_cert.exists();
    let (authority, authority_key) = if new_authority {
        if ca_key.exists() {
            bail!(
                "{} exists without {}: restore the authority's certificate, or move the key away \
                 to make a new authority (every program must then trust the new ca.pem)",
                ca_key.display(),
                ca_cert.display()
            );
        }
        let key = KeyPair::generate().context("making the authority's key")?;
        let mut params = CertificateParams::default();
        params.distinguished_name = name("boardcast hall authority");
        params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        (params.not_before, params.not_after) = validity(CA_DAYS);
        let certificate = params
            .self_signed(&key)
            .context("making the authority's certificate")?;
        crate::secrets::write_private(&ca_key, &key.serialize_pem())?;
        write_public(&ca_cert, &certificate.pem())?;
        (certificate, key)
    } else {
        let key_pem = std::fs::read_to_string(&ca_key).with_context(|| {
            format!(
                "reading the authority's key {} (host certificates are made where it is)",
                ca_key.display()
            )
        })?;
        let key = KeyPair::from_pem(&key_pem)
            .with_context(|| format!("{} is not a private key", ca_key.display()))?;
        let cert_pem = std::fs::read_to_string(&ca_cert)
            .with_context(|| format!("reading {}", ca_cert.display()))?;
        let params = CertificateParams::from_ca_cert_pem(&cert_pem)
            .with_context(|| format!("{} is not a certificate", ca_cert.display()))?;
        // The same subject and key as the file's: what a certificate it signed names as its
        // issuer, and is checked against.
        let certificate = params
            .self_signed(&key)
            .context("reading the authority's certificate")?;
        (certificate, key)
    };
    let mut written = Vec::new();
    for host in hosts {
        let key = KeyPair::generate().context("making a host key")?;
        let mut names = vec![host.name.clone(), "localhost".to_owned()];
        names.dedup();
        let mut params = CertificateParams::new(names).context("naming the host")?;
        params.subject_alt_names.extend(
            host.addresses
                .iter()
                .chain(&[
                    IpAddr::from([127, 0, 0, 1]),
                    IpAddr::from(std::net::Ipv6Addr::LOCALHOST),
                ])
                .map(|address| SanType::IpAddress(*address)),
        );
        params.distinguished_name = name(&host.name);
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        params.extended_key_usages = vec![
            ExtendedKeyUsagePurpose::ServerAuth,
            ExtendedKeyUsagePurpose::ClientAuth,
        ];
        (params.not_before, params.not_after) = validity(i64::from(days));
        let certificate = params
            .signed_by(&key, &authority, &authority_key)
            .with_context(|| format!("signing {}'s certificate", host.name))?;
        let (cert_path, key_path) = (
            dir.join(format!("{}.pem", host.name)),
            dir.join(format!("{}.key", host.name)),
        );
        crate::secrets::write_private(&key_path, &key.serialize_pem())?;
        write_public(&cert_path, &certificate.pem())?;
        written.push((cert_path, key_path));
    }
    Ok(Written {
        new_authority,
        hosts: written,
    })
}

/// A certificate, readable by everyone whatever the umask (programs under other users read it).
fn write_public(path: &Path, pem: &str) -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::write(path, pem).with_context(|| format!("writing {}", path.display()))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o644))
        .with_context(|| format!("making {} readable", path.display()))
}

fn name(common_name: &str) -> DistinguishedName {
    let mut name = DistinguishedName::new();
    name.push(DnType::CommonName, common_name);
    name.push(DnType::OrganizationName, "boardcast");
    name
}

/// From an hour ago (clocks of a hall's machines differ a little) for `days`.
fn validity(days: i64) -> (time::OffsetDateTime, time::OffsetDateTime) {
    let now = time::OffsetDateTime::now_utc();
    (
        now - time::Duration::hours(1),
        now + time::Duration::days(days),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_parse_with_their_addresses() {
        assert_eq!(
            "Boardcast-1=192.168.77.11, ::1".parse::<Host>().ok(),
            Some(Host {
                name: "boardcast-1".into(),
                addresses: vec!["192.168.77.11".parse().unwrap(), "::1".parse().unwrap()],
            })
        );
        assert!("".parse::<Host>().is_err());
        assert!("bad name".parse::<Host>().is_err());
        assert!("-x".parse::<Host>().is_err());
        assert!("host=999.1.1.1".parse::<Host>().is_err());
        assert!("CA".parse::<Host>().is_err());
    }

    #[test]
    fn an_authority_is_made_once_and_signs_later_hosts_too() {
        let dir = tempfile::tempdir().unwrap();
        let first = make_certificates(dir.path(), &["a=10.0.0.1".parse().unwrap()], 30).unwrap();
        assert!(first.new_authority);
        let ca = std::fs::read(dir.path().join(CA_CERT_FILE)).unwrap();
        let second = make_certificates(dir.path(), &["b".parse().unwrap()], 30).unwrap();
        assert!(!second.new_authority);
        assert_eq!(std::fs::read(dir.path().join(CA_CERT_FILE)).unwrap(), ca);
        use std::os::unix::fs::PermissionsExt as _;
        for cert in [CA_CERT_FILE, "a.pem", "b.pem"] {
            let mode = std::fs::metadata(dir.path().join(cert))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o644, "{cert} is readable by every program");
        }
        for key in [CA_KEY_FILE, "a.key", "b.key"] {
            let mode = std::fs::metadata(dir.path().join(key))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o077, 0, "{key} is private");
        }
        assert!(make_certificates(dir.path(), &[], 30).is_err());
        assert!(make_certificates(dir.path(), &["c".parse().unwrap()], 0).is_err());
    }
}
