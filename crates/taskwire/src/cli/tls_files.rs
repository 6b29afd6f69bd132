//! The TLS files flags name (client certificates, CA bundles), read once and checked.

use crate::error::Error;

/// The contents of `f`, given with `flag`.
pub(crate) fn read_file(flag: &str, f: &std::path::Path) -> Result<Vec<u8>, Error> {
    std::fs::read(f).map_err(|e| Error::Usage(format!("{flag} {}: {e}", f.display())))
}

/// A client certificate as read from its files: the certificate chain (leaf
/// first) and the leaf's private key, PEM.
pub(crate) struct IdentityFiles {
    pub(crate) chain: Vec<u8>,
    pub(crate) key: Vec<u8>,
}

impl IdentityFiles {
    /// The key and the chain in one PEM buffer, as reqwest takes them.
    pub(crate) fn pem(&self) -> Vec<u8> {
        let mut pem = self.key.clone();
        pem.push(b'\n');
        pem.extend_from_slice(&self.chain);
        pem
    }
}

/// A client certificate from a certificate chain file and a key file (both
/// PEM; none unless both are given), read once and checked with the parser
/// the clients use.
pub(crate) fn read_identity(
    cert: (&str, Option<&std::path::Path>),
    key: (&str, Option<&std::path::Path>),
) -> Result<Option<IdentityFiles>, Error> {
    let (Some(cert_file), Some(key_file)) = (cert.1, key.1) else {
        return Ok(None);
    };
    let files = IdentityFiles {
        key: read_file(key.0, key_file)?,
        chain: read_file(cert.0, cert_file)?,
    };
    reqwest::Identity::from_pem(&files.pem()).map_err(|e| {
        Error::Usage(format!(
            "{} {} with {} {}: {e}",
            cert.0,
            cert_file.display(),
            key.0,
            key_file.display()
        ))
    })?;
    Ok(Some(files))
}

/// The contents of the PEM files given with `flag`, each holding at least
/// one certificate that parses.
pub(crate) fn read_ca_files(
    flag: &str,
    files: &[std::path::PathBuf],
) -> Result<Vec<Vec<u8>>, Error> {
    let mut out = Vec::with_capacity(files.len());
    for f in files {
        let pem = read_file(flag, f)?;
        match reqwest::Certificate::from_pem_bundle(&pem) {
            Ok(certs) if !certs.is_empty() => out.push(pem),
            Ok(_) => {
                return Err(Error::Usage(format!(
                    "{flag} {}: no PEM certificate in it",
                    f.display()
                )))
            }
            Err(e) => return Err(Error::Usage(format!("{flag} {}: {e}", f.display()))),
        }
    }
    Ok(out)
}
