// Package pg is the PostgreSQL adapter: connection configuration from --dsn,
// the PG* environment variables and .pgpass, with credentials kept out of
// argv, logs and results.
package pg

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/netio"
	"github.com/tunebench/tunebench/internal/redact"
)

// EnvDSN is the environment variable that may carry a full connection string,
// including a password (it is not visible in argv).
const EnvDSN = "TUNEBENCH_DSN"

// Target is a parsed, validated connection target.
type Target struct {
	Config *pgx.ConnConfig
	// NetpollIO makes Connect use Go's standard network I/O instead of
	// blocking system calls (for comparisons).
	NetpollIO bool
	red       *redact.Redactor
	// StartupWait bounds how long a connection (not a worker's: ConnectNoWait) waits for a server that
	// refuses it because it is starting up, in crash recovery or shutting
	// down (SQLSTATE 57P03), 0: not at all; Log, when set, is told while
	// it waits.
	StartupWait time.Duration
	Log         io.Writer
}

// DefaultStartupWait is how long commands wait for a server that is
// starting up or recovering (57P03) before they give up.
const DefaultStartupWait = 2 * time.Minute

// startupPoll is how often a server that is starting up is tried again,
// and startupSay how often the wait is said.
var (
	startupPoll = 250 * time.Millisecond
	startupSay  = 5 * time.Second
)

// parseErrorText is a connection string's parse error, masked. pgconn
// masks the string itself (its own patterns, which also know a URL whose
// password has a space); tunebench's patterns then mask what they find in
// it, but on the string alone: on the whole message, a password= value
// masked by pgconn and followed by the closing backquote took the
// backquote and the colon too.
func parseErrorText(err error, red *redact.Redactor) string {
	var pe *pgconn.ParseConfigError
	if !errors.As(err, &pe) {
		return red.String(err.Error())
	}
	const mark = "\x00connstring\x00"
	probe := *pe
	probe.ConnString = mark
	head, tail, ok := strings.Cut(probe.Error(), mark)
	full := pe.Error() // the string masked by pgconn, between head and tail
	if !ok || !strings.HasPrefix(full, head) || !strings.HasSuffix(full, tail) || len(full) < len(head)+len(tail) {
		return red.String(full)
	}
	masked := full[len(head) : len(full)-len(tail)]
	return red.String(head) + red.String(masked) + red.String(tail)
}

// ParseTarget builds the connection configuration. dsnFlag is the --dsn value
// (from argv: a password in it is refused); envDSN is $TUNEBENCH_DSN (may
// hold a password). Empty both: libpq defaults from PG* variables and .pgpass.
// Any password found is registered with red.
func ParseTarget(dsnFlag, envDSN string, red *redact.Redactor) (*Target, error) {
	dsn := dsnFlag
	if dsn != "" && hasPassword(dsn) {
		return nil, errs.Usage("pass the password through PGPASSWORD, a .pgpass file (PGPASSFILE), or the whole connection string in $"+EnvDSN+"; command-line arguments are visible to every local user",
			"refusing a password inside --dsn")
	}
	if dsn == "" {
		dsn = envDSN
	}
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		// pgx's parse errors may echo the connection string: redact.
		return nil, errs.Usage("check the connection string syntax: key=value pairs (host=... port=... dbname=...) or a postgres:// URL",
			"invalid connection string: %s", parseErrorText(err, red))
	}
	red.AddSecret(cfg.Password)
	if cfg.RuntimeParams == nil {
		cfg.RuntimeParams = map[string]string{}
	}
	if _, ok := cfg.RuntimeParams["application_name"]; !ok {
		cfg.RuntimeParams["application_name"] = "tunebench"
	}
	return &Target{Config: cfg, red: red}, nil
}

// Remote reports whether the server is on another machine: the host the
// connection names (or one of its fallbacks) is neither a Unix socket, nor
// localhost, nor a loopback address. The server's host is then out of
// reach: its CPU, memory, disks and processes cannot be measured from
// here, and nothing of its filesystem can be touched.
func (t *Target) Remote() bool {
	if !isLoopback(t.Config.Host) {
		return true
	}
	for _, fb := range t.Config.Fallbacks {
		if !isLoopback(fb.Host) {
			return true
		}
	}
	return false
}

func hasPassword(dsn string) bool {
	return strings.Contains(redact.Patterns(dsn), redact.Mask())
}

// isLoopback accepts Unix socket paths, localhost and loopback addresses
// (a server on this machine).
func isLoopback(host string) bool {
	if host == "" || strings.HasPrefix(host, "/") {
		return true
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// Describe is a password-free description for logs: user@host:port/db.
func (t *Target) Describe() string {
	c := t.Config
	return fmt.Sprintf("%s@%s:%d/%s", c.User, c.Host, c.Port, c.Database)
}

// Copy returns an independent copy of the configuration (one per connection).
func (t *Target) Copy() *pgx.ConnConfig { return t.Config.Copy() }

// WithDatabase returns a target for another database on the same server.
func (t *Target) WithDatabase(db string) *Target {
	c := t.Config.Copy()
	c.Database = db
	return &Target{Config: c, NetpollIO: t.NetpollIO, red: t.red, StartupWait: t.StartupWait, Log: t.Log}
}

// Connect opens one connection for load generation; failures become
// KindConnect errors with the password redacted and a hint.
//
// Unless NetpollIO is set, the connection does blocking system calls on its
// socket (see directConn): a round trip then costs one sleep and one wake-up
// of the calling thread in the kernel instead of a netpoller hand-off between
// threads. Every pgx feature keeps working (context cancellation, deadlines,
// Close from another goroutine); the price is one OS thread per connection
// blocked in a read, which is what a benchmark client wants anyway.
func (t *Target) Connect(ctx context.Context) (*pgx.Conn, error) {
	return t.connect(ctx, !t.NetpollIO, t.StartupWait)
}

// ConnectNoWait is Connect without the wait for a server that is starting
// up: a worker's session connects this way, and while the server recovers
// during a run its failed attempts are what the run's outage is made of.
func (t *Target) ConnectNoWait(ctx context.Context) (*pgx.Conn, error) {
	return t.connect(ctx, !t.NetpollIO, 0)
}

// ConnectStd opens one connection with Go's standard network I/O, for
// connections that are not on the measured path.
func (t *Target) ConnectStd(ctx context.Context) (*pgx.Conn, error) {
	return t.connect(ctx, false, t.StartupWait)
}

func (t *Target) connect(ctx context.Context, direct bool, startupWait time.Duration) (*pgx.Conn, error) {
	cfg := t.Config.Copy()
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = 10 * time.Second
	}
	if direct {
		dial := cfg.DialFunc
		if dial == nil {
			dial = (&net.Dialer{KeepAlive: 5 * time.Minute}).DialContext
		}
		cfg.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := dial(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			c, _ = netio.NewDirectConn(c)
			return c, nil
		}
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil && startingUp(err) && startupWait > 0 {
		conn, err = t.waitStartup(ctx, cfg, err, startupWait)
		if errs.KindOf(err) == errs.KindInterrupted {
			return nil, err
		}
	}
	if err != nil {
		return nil, t.ConnectError(err)
	}
	return conn, nil
}

// startingUp reports whether the server refused a connection because it
// is starting up, in crash recovery or shutting down.
func startingUp(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "57P03"
}

// waitStartup tries again while the server says it is starting up, for
// StartupWait at most, saying so every startupSay; the error is the last
// attempt's.
func (t *Target) waitStartup(ctx context.Context, cfg *pgx.ConnConfig, err error, limit time.Duration) (*pgx.Conn, error) {
	start := time.Now()
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < limit {
		limit = time.Until(dl)
	}
	said := start // said from the first startupSay on: a short wait is not worth a line
	for startingUp(err) && time.Since(start) < limit {
		if t.Log != nil && time.Since(said) >= startupSay {
			var pe *pgconn.PgError
			errors.As(err, &pe)
			fmt.Fprintf(t.Log, "waiting for the server at %s: %s (%s so far, at most %s)\n",
				t.Describe(), pe.Message, time.Since(start).Round(time.Second), limit.Round(time.Second))
			said = time.Now()
		}
		select {
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.Canceled) {
				return nil, errs.Wrap(errs.KindInterrupted, ctx.Err(), "", "interrupted while waiting for %s to start up", t.Describe())
			}
			return nil, &startupError{err: err, waited: time.Since(start).Round(time.Second)}
		case <-time.After(startupPoll):
		}
		var conn *pgx.Conn
		if conn, err = pgx.ConnectConfig(ctx, cfg.Copy()); err == nil {
			return conn, nil
		}
	}
	if startingUp(err) {
		return nil, &startupError{err: err, waited: time.Since(start).Round(time.Second)}
	}
	return nil, err
}

// startupError is a server still starting up after the wait.
type startupError struct {
	err    error
	waited time.Duration
}

func (e *startupError) Error() string {
	return fmt.Sprintf("still not accepting connections after %s: %v", e.waited, e.err)
}
func (e *startupError) Unwrap() error { return e.err }

// ConnectError classifies a connection failure.
func (t *Target) ConnectError(err error) error {
	msg := t.red.String(err.Error())
	hint := "check that the server is running and reachable (tunebench server status --dir D, or pg_isready), and the --dsn / PGHOST, PGPORT, PGUSER, PGDATABASE, PGPASSFILE settings"
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		// The server answered: its error is the cause. pgx's message also
		// lists the attempts before it (with sslmode=prefer, "tls error:
		// server refused TLS connection"), which misleads.
		msg = t.red.String(pe.Error())
		switch {
		case pe.Code == "28000" && strings.Contains(pe.Message, "no encryption"):
			// PostgreSQL says "no encryption" of every plain connection
			// it has no line for: TLS-only (hostssl) or no line at all.
			hint = "the server's pg_hba.conf lets no plain connection of this client in: if it takes only TLS (hostssl), add sslmode=require to --dsn (verify-full with sslrootcert=FILE also checks its certificate); otherwise add a line for this client's address, user and database on the server and reload it"
		case pe.Code == "28000" && strings.Contains(pe.Message, "pg_hba.conf"):
			hint = "the server's pg_hba.conf has no line for this client (its address, user and database): add one on the server and reload it"
		case pe.Code == "28P01":
			hint = "authentication failed: set the password with PGPASSWORD or a .pgpass file (PGPASSFILE)"
		case pe.Code == "28000":
			hint = "the server refused this client: its pg_hba.conf may have no line for this client's address, user and database (add one and reload), take only TLS (add sslmode=require to --dsn), or the role may not log in"
		case pe.Code == "3D000":
			hint = "the database does not exist: create it (createdb) or pick another with dbname= / PGDATABASE"
		case pe.Code == "57P03":
			hint = "the server is starting up, recovering from a crash or shutting down: its log says which and how far it is; run again once it accepts connections, and if it stays so, look in the log for what stops it (a full disk: free space on its data directory's filesystem)"
		case pe.Code == "42704" || pe.Code == "22023":
			hint = "the connection string sets a parameter the server does not accept (" + t.red.String(pe.Message) +
				"): remove it from --dsn / $TUNEBENCH_DSN, or check its spelling (libpq's keywords: host, port, dbname, user, sslmode, ...)"
		}
	}
	var se *startupError
	if errors.As(err, &se) {
		msg = fmt.Sprintf("still not accepting connections after %s: %s", se.waited, msg)
	}
	var ne net.Error
	var unknownCA x509.UnknownAuthorityError
	var badHost x509.HostnameError
	var invalid x509.CertificateInvalidError
	switch {
	case pe != nil:
	case errors.As(err, &unknownCA):
		hint = "the server's TLS certificate is not signed by an authority this client trusts: give the CA that signed it with sslrootcert=FILE in the connection string (sslmode=verify-full checks the host name too), or sslmode=require to encrypt without checking who the server is"
	case errors.As(err, &badHost):
		names := strings.Join(badHost.Certificate.DNSNames, ", ")
		if names == "" {
			names = badHost.Certificate.Subject.CommonName
		}
		hint = fmt.Sprintf("the server's TLS certificate is for %s, not %s: connect by a name the certificate has (host=...), or ask for a certificate with this name; sslmode=verify-ca checks the authority without the name", names, badHost.Host)
	case errors.As(err, &invalid) && invalid.Reason == x509.Expired:
		hint = "the server's TLS certificate has expired or is not valid yet: renew it on the server, or check this machine's clock"
	case errors.As(err, &invalid):
		hint = "the server's TLS certificate is not valid for this use (" + invalid.Error() + "): check the certificate the server presents"
	case errors.Is(err, syscall.ECONNREFUSED):
		hint = fmt.Sprintf("nothing listens on %s port %d: check that the server is running there, and its port and listen_addresses", t.Config.Host, t.Config.Port)
	case errors.Is(err, syscall.EHOSTUNREACH) || errors.Is(err, syscall.ENETUNREACH):
		hint = fmt.Sprintf("no route to %s from this machine: check the address and the network between", t.Config.Host)
	case errors.As(err, &ne) && ne.Timeout() || errors.Is(err, context.DeadlineExceeded):
		hint = fmt.Sprintf("no answer from %s port %d: check the address, the port and any firewall between (connect_timeout= in --dsn waits longer)", t.Config.Host, t.Config.Port)
	}
	// Keep the cause, not the *pgconn.ConnectError itself: its Config holds
	// the password.
	cause := err
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		cause = ce.Unwrap()
	}
	return &errs.Error{Kind: errs.KindConnect, Msg: fmt.Sprintf("cannot connect to %s", t.Describe()), Hint: hint, Err: &redactedError{msg: msg, err: cause}}
}

// redactedError shows a redacted message but keeps the cause in the chain,
// so classification (SQLSTATE, network errors) still sees it: a failed
// reconnect must count as a connection error, not a client error. It never
// holds the connection configuration (which has the password).
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// ConnectFailure marks the error as a failed connection attempt for
// driver.IsConnError.
func (e *redactedError) ConnectFailure() bool { return true }

// Redactor is the redactor secrets were registered with.
func (t *Target) Redactor() *redact.Redactor { return t.red }
