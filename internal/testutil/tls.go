package testutil

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tunebench/tunebench/internal/server"
)

// ServerTLS writes a self-signed certificate and its key as server.crt and
// server.key in srv's data directory (PostgreSQL's defaults), owned by the
// data directory's owner: `ALTER SYSTEM SET ssl = on` and a reload then
// turn TLS on.
func ServerTLS(tb testing.TB, srv *server.Server) {
	tb.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "tunebench test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		tb.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		tb.Fatal(err)
	}
	st, err := os.Stat(srv.DataDir())
	if err != nil {
		tb.Fatal(err)
	}
	uid, gid := fileIDs(st)
	for name, block := range map[string]*pem.Block{"server.crt": {Type: "CERTIFICATE", Bytes: der}, "server.key": {Type: "EC PRIVATE KEY", Bytes: kb}} {
		path := filepath.Join(srv.DataDir(), name)
		if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
			tb.Fatal(err)
		}
		if err := os.Chown(path, uid, gid); err != nil {
			tb.Fatal(err)
		}
	}
}
