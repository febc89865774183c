package pg

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"

	"strings"
	"testing"

	"github.com/tunebench/tunebench/internal/driver"
	"github.com/tunebench/tunebench/internal/step"

	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/redact"
)

func TestParseTargetRefusesPasswordInFlag(t *testing.T) {
	t.Setenv("PGPASSWORD", "")
	for _, dsn := range []string{
		"host=127.0.0.1 password=s3cretS3cret",
		"postgres://u:s3cretS3cret@127.0.0.1:5432/db",
	} {
		_, err := ParseTarget(dsn, "", redact.New())
		if errs.KindOf(err) != errs.KindUsage {
			t.Fatalf("%q: got %v, want usage error", dsn, err)
		}
		if strings.Contains(err.Error(), "s3cretS3cret") {
			t.Fatalf("error leaks password: %v", err)
		}
	}
}

func TestParseTargetEnvPasswordRegistered(t *testing.T) {
	red := redact.New()
	tg, err := ParseTarget("", "host=127.0.0.1 port=1 user=u password=Sentinel-XYZ dbname=d", red)
	if err != nil {
		t.Fatal(err)
	}
	if tg.Config.Password != "Sentinel-XYZ" {
		t.Fatalf("password not parsed")
	}
	if got := red.String("oops Sentinel-XYZ leaked"); strings.Contains(got, "Sentinel-XYZ") {
		t.Fatalf("not redacted: %s", got)
	}
	if strings.Contains(tg.Describe(), "Sentinel") {
		t.Fatal("Describe leaks")
	}
}

func TestParseTargetRemote(t *testing.T) {
	for _, h := range []string{"10.0.0.1", "example.com", "192.168.1.1", "127.0.0.1,10.0.0.2"} {
		tg, err := ParseTarget("host="+h, "", redact.New())
		if err != nil || !tg.Remote() {
			t.Errorf("host %s: %v, remote %v", h, err, err == nil && tg.Remote())
		}
	}
	for _, h := range []string{"127.0.0.1", "localhost", "::1", "/tmp", "127.0.0.2,::1"} {
		tg, err := ParseTarget("host="+h, "", redact.New())
		if err != nil || tg.Remote() {
			t.Errorf("host %s: %v, remote %v", h, err, err == nil && tg.Remote())
		}
	}
}

func TestConnectErrorKeepsCauseForClassification(t *testing.T) {
	tg, err := ParseTarget("host=127.0.0.1 port=1 user=u dbname=d sslmode=disable", "", redact.New())
	if err != nil {
		t.Fatal(err)
	}
	_, err = tg.ConnectStd(context.Background())
	if errs.KindOf(err) != errs.KindConnect {
		t.Fatalf("kind %v: %v", errs.KindOf(err), err)
	}
	if !driver.IsConnError(err) {
		t.Fatalf("refused connection not classified as a connection error: %v", err)
	}
	if class, _ := driver.Classify(err, false, 1); class != step.ClassConnError {
		t.Fatalf("class %v", class)
	}
	// The chain must not expose pgconn's ConnectError: its Config holds
	// the password.
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		t.Fatalf("error chain exposes *pgconn.ConnectError (with its Config): %v", err)
	}
}

// TestParseErrorMasked: a connection string that does not parse is shown
// masked, whole, in its backquotes, wherever its password is and however
// it is quoted.
func TestParseErrorMasked(t *testing.T) {
	for _, dsn := range []string{
		"host=localhost port=abc password='Sentinel XYZ'",
		"host=localhost port=abc password=Sentinel-XYZ",
		"password='Sentinel XYZ' host=localhost port=abc",
		"postgres://u:Sentinel-XYZ@localhost:abc/db",
		"postgres://u:Sentinel XYZ@localhost:abc/db",
	} {
		_, err := ParseTarget("", dsn, redact.New())
		if err == nil {
			t.Fatalf("%s parsed", dsn)
		}
		msg := err.Error()
		if strings.Contains(msg, "Sentinel") || !strings.Contains(msg, "cannot parse `") || strings.Count(msg, "`") != 2 || !strings.Contains(msg, "`: ") {
			t.Errorf("%s: %s", dsn, msg)
		}
	}
}

// TestCertificateHints: a TLS certificate the client refuses gets a fix
// that names the problem, not the generic connection one (issue 41 item
// 8).
func TestCertificateHints(t *testing.T) {
	tg, err := ParseTarget("host=db1.example.com port=5432 user=u dbname=d", "", redact.New())
	if err != nil {
		t.Fatal(err)
	}
	cert := &x509.Certificate{DNSNames: []string{"db2.example.com"}}
	for _, c := range []struct {
		err  error
		want string
	}{
		{x509.UnknownAuthorityError{Cert: cert}, "sslrootcert=FILE"},
		{x509.HostnameError{Certificate: cert, Host: "db1.example.com"}, "is for db2.example.com, not db1.example.com"},
		{x509.CertificateInvalidError{Cert: cert, Reason: x509.Expired}, "has expired or is not valid yet"},
	} {
		err := tg.ConnectError(fmt.Errorf("failed to connect: tls: %w", c.err))
		if h := errs.HintOf(err); !strings.Contains(h, c.want) {
			t.Errorf("%T: fix %q, want %q in it", c.err, h, c.want)
		}
	}
}
