//! Certificates for TLS tests: a CA and the server and client certificates it
//! signed, all naming `127.0.0.1` and `localhost`, as PEM text and files.

use crate::server::ServerTls;
use std::path::Path;

/// A CA, and server and client certificates it signed ([`Pki::generate`]).
#[derive(Clone)]
pub struct Pki {
    /// The CA certificate (what clients and the server trust).
    pub ca: String,
    /// ZooKeeper's PEM key store: the server's key and certificate in one file.
    pub server_key_store: String,
    /// The client certificate.
    pub client_cert: String,
    /// The client's private key.
    pub client_key: String,
}

impl std::fmt::Debug for Pki {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Pki")
    }
}

impl Pki {
    /// Fresh keys and certificates.
    pub fn generate() -> Pki {
        use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let ca = CertifiedIssuer::self_signed(ca_params, KeyPair::generate().expect("CA key"))
            .expect("CA certificate");
        let leaf = || {
            let key = KeyPair::generate().expect("key");
            let names = vec!["127.0.0.1".to_owned(), "localhost".to_owned()];
            let cert = CertificateParams::new(names)
                .expect("params")
                .signed_by(&key, &ca)
                .expect("certificate");
            (cert.pem(), key.serialize_pem())
        };
        let (server_cert, server_key) = leaf();
        let (client_cert, client_key) = leaf();
        Pki {
            ca: ca.pem(),
            server_key_store: format!("{server_key}{server_cert}"),
            client_cert,
            client_key,
        }
    }

    /// Writes the server's stores into `dir` (`server.pem`, `ca.pem`) and returns
    /// the server option that uses them.
    pub fn server_tls(&self, dir: &Path) -> std::io::Result<ServerTls> {
        std::fs::create_dir_all(dir)?;
        std::fs::write(dir.join("server.pem"), &self.server_key_store)?;
        std::fs::write(dir.join("ca.pem"), &self.ca)?;
        Ok(ServerTls::new(dir.join("server.pem"), dir.join("ca.pem")))
    }

    /// Writes the client's files into `dir` (`ca.pem`, `client.pem`,
    /// `client.key`).
    pub fn write_client_files(&self, dir: &Path) -> std::io::Result<()> {
        std::fs::create_dir_all(dir)?;
        std::fs::write(dir.join("ca.pem"), &self.ca)?;
        std::fs::write(dir.join("client.pem"), &self.client_cert)?;
        std::fs::write(dir.join("client.key"), &self.client_key)
    }
}
