// Package testpki makes a throw-away certificate authority with a server
// certificate for loopback and a client certificate, written as PEM files,
// for tests that need real TLS. Only tests import it.
package testpki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// PKI holds the paths of the PEM files New wrote and the CA pool.
type PKI struct {
	CAFile, ServerCert, ServerKey, ClientCert, ClientKey string
	// OtherCAFile is a second, unrelated CA: certificates of PKI are not
	// valid under it.
	OtherCAFile string
	Pool        *x509.CertPool
}

// ClientName is the DNS name in the client certificate.
const ClientName = "client.seismo.test"

// New writes a CA, a server certificate for 127.0.0.1, ::1 and localhost,
// and a client certificate for ClientName into dir.
func New(t testing.TB, dir string) PKI {
	t.Helper()
	caKey, caCert, caDER := newCA(t, "seismo test CA")
	p := PKI{
		CAFile:      filepath.Join(dir, "ca.pem"),
		ServerCert:  filepath.Join(dir, "server.pem"),
		ServerKey:   filepath.Join(dir, "server-key.pem"),
		ClientCert:  filepath.Join(dir, "client.pem"),
		ClientKey:   filepath.Join(dir, "client-key.pem"),
		OtherCAFile: filepath.Join(dir, "other-ca.pem"),
		Pool:        x509.NewCertPool(),
	}
	p.Pool.AddCert(caCert)
	writePEM(t, p.CAFile, "CERTIFICATE", caDER)
	_, _, otherDER := newCA(t, "unrelated CA")
	writePEM(t, p.OtherCAFile, "CERTIFICATE", otherDER)

	server := &x509.Certificate{
		Subject:     pkix.Name{CommonName: "localhost"},
		DNSNames:    []string{"localhost"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	leaf(t, server, caCert, caKey, p.ServerCert, p.ServerKey)
	client := &x509.Certificate{
		Subject:     pkix.Name{CommonName: ClientName},
		DNSNames:    []string{ClientName},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	leaf(t, client, caCert, caKey, p.ClientCert, p.ClientKey)
	return p
}

// ClientTLS returns a client config that trusts the CA, with the client
// certificate when withCert is set.
func (p PKI) ClientTLS(t testing.TB, withCert bool) *tls.Config {
	t.Helper()
	cfg := &tls.Config{RootCAs: p.Pool, MinVersion: tls.VersionTLS12}
	if withCert {
		c, err := tls.LoadX509KeyPair(p.ClientCert, p.ClientKey)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Certificates = []tls.Certificate{c}
	}
	return cfg
}

func template(cn string) *x509.Certificate {
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	if err != nil {
		panic(err) // crypto/rand does not fail
	}
	return &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
	}
}

func newCA(t testing.TB, cn string) (*ecdsa.PrivateKey, *x509.Certificate, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := template(cn)
	tmpl.IsCA = true
	tmpl.BasicConstraintsValid = true
	tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return key, cert, der
}

func leaf(t testing.TB, spec, ca *x509.Certificate, caKey *ecdsa.PrivateKey, certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := template(spec.Subject.CommonName)
	tmpl.DNSNames, tmpl.IPAddresses, tmpl.ExtKeyUsage = spec.DNSNames, spec.IPAddresses, spec.ExtKeyUsage
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	writePEM(t, certFile, "CERTIFICATE", der)
	writePEM(t, keyFile, "PRIVATE KEY", kb)
}

func writePEM(t testing.TB, path, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}
