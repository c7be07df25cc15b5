"""Certificates for the TLS tests, made at run time with `cryptography`: a CA, a server
certificate for 127.0.0.1 and localhost, and client certificates, all signed by the CA.
Keys are unencrypted PKCS#8 PEM (what Kafka's PEM keystores need).

`make_pki(dir)` writes:
- `ca.pem`: the CA certificate (the truststore of clients and of the broker);
- `server.pem`: the server's key and certificate chain in one file (the broker's
  `--ssl-keystore-location`, Kafka's `ssl.keystore.type=PEM` layout), and
  `server.key` / `server.crt` separately;
- `<name>.key` / `<name>.crt` / `<name>.pem` for each client in `clients`
  (subject `CN=<name>,OU=eng,O=acme`).
"""

from __future__ import annotations

import datetime
import ipaddress
from pathlib import Path
from typing import Dict, Sequence

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


def _key():
    return ec.generate_private_key(ec.SECP256R1())


def _pem_key(key) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _pem_cert(cert) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def _name(cn: str, ou: str = "eng", o: str = "acme") -> x509.Name:
    # Written in the order Java prints in reverse: O, OU, CN -> "CN=..,OU=..,O=..".
    return x509.Name([
        x509.NameAttribute(NameOID.ORGANIZATION_NAME, o),
        x509.NameAttribute(NameOID.ORGANIZATIONAL_UNIT_NAME, ou),
        x509.NameAttribute(NameOID.COMMON_NAME, cn),
    ])


def _issue(subject: x509.Name, key, issuer: x509.Name, issuer_key, *, ca: bool,
           sans: Sequence[x509.GeneralName] = (), usage=None):
    now = datetime.datetime.now(datetime.timezone.utc)
    builder = (x509.CertificateBuilder()
               .subject_name(subject)
               .issuer_name(issuer)
               .public_key(key.public_key())
               .serial_number(x509.random_serial_number())
               .not_valid_before(now - datetime.timedelta(hours=1))
               .not_valid_after(now + datetime.timedelta(days=2))
               .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
    if ca:
        builder = builder.add_extension(
            x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                          content_commitment=False, key_encipherment=False,
                          data_encipherment=False, key_agreement=False,
                          encipher_only=False, decipher_only=False), critical=True)
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(list(sans)), critical=False)
    if usage:
        builder = builder.add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
    return builder.sign(issuer_key, hashes.SHA256())


def make_pki(directory: Path, clients: Sequence[str] = ("alice",)) -> Dict[str, Path]:
    """Writes the CA, the server's keystore and the clients' keys and certificates into
    `directory`; returns their paths by name (`ca`, `server`, `server.key`, `server.crt`,
    and `<client>.key` / `<client>.crt` / `<client>` for the combined PEM)."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    ca_key = _key()
    ca_name = _name("shardlog test CA", ou="test")
    ca = _issue(ca_name, ca_key, ca_name, ca_key, ca=True)
    paths: Dict[str, Path] = {}

    def write(name: str, data: bytes) -> Path:
        p = directory / name
        p.write_bytes(data)
        return p

    paths["ca"] = write("ca.pem", _pem_cert(ca))
    server_key = _key()
    server = _issue(_name("localhost", ou="broker"), server_key, ca_name, ca_key, ca=False,
                    sans=[x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))],
                    usage=ExtendedKeyUsageOID.SERVER_AUTH)
    paths["server.key"] = write("server.key", _pem_key(server_key))
    paths["server.crt"] = write("server.crt", _pem_cert(server) + _pem_cert(ca))
    paths["server"] = write("server.pem", _pem_key(server_key) + _pem_cert(server) + _pem_cert(ca))
    for client in clients:
        key = _key()
        cert = _issue(_name(client), key, ca_name, ca_key, ca=False,
                      usage=ExtendedKeyUsageOID.CLIENT_AUTH)
        paths[f"{client}.key"] = write(f"{client}.key", _pem_key(key))
        paths[f"{client}.crt"] = write(f"{client}.crt", _pem_cert(cert))
        paths[client] = write(f"{client}.pem", _pem_key(key) + _pem_cert(cert))
    return paths


if __name__ == "__main__":  # used by the benchmark to make its certificates once per run
    import sys

    for name, path in make_pki(Path(sys.argv[1])).items():
        print(f"{name}\t{path}")
