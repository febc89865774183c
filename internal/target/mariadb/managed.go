// Package mariadb is the MariaDB target: a server reached by a mariadb://
// (or mysql://) connection string, or a managed MariaDB, made, started
// and stopped by tunebench in a directory of its own as the managed
// PostgreSQL is; its settings, databases, samplers, worker sessions and
// admin connections.
package mariadb

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/human"
	"github.com/tunebench/tunebench/internal/proc"
	"github.com/tunebench/tunebench/internal/server"
)

// User is the account tunebench makes on a managed server and connects
// as (all privileges, from 127.0.0.1 and the socket).
const User = "tunebench"

// DefaultDatabase is the database a managed server is made with, which
// a target names when the command line names none.
const DefaultDatabase = "tunebench"

// Files of a managed server's directory.
const (
	dataSubdir   = "data"
	tmpSubdir    = "tmp"               // the server's temporary tables: its own, on its filesystem (not a shared /tmp)
	optionFile   = "my.cnf"            // the server's options, written by tunebench
	settingsFile = "tunebench.cnf"     // settings that need a restart, included by my.cnf
	clientFile   = "client.cnf"        // the client's options: user, password, port (mode 0600)
	stateFile    = "tunebench.json"    // what tunebench recorded of the server
	runSubdir    = "run"               // the server's own files, the only ones its OS user owns besides data and tmp
	socketFile   = "run/mariadbd.sock" // the server's socket
	pidFile      = "run/mariadbd.pid"  // the server's pid
	logFile      = "run/mariadbd.log"  // the server's error log
	fileSubdir   = "run/files"         // secure_file_priv: the only directory its FILE privilege reaches
	passFile     = "tunebench.pass"    // the password (mode 0600)
)

// Options say where and how to run a managed server.
type Options struct {
	Dir   string // the server's directory (made when missing)
	Port  int    // 0: the recorded one, else a free one
	RunAs string // the OS user the server runs as when tunebench runs as root ("": mysql)
	Bin   string // the directory of mariadbd and mariadb-install-db ("": PATH, /usr/sbin)
}

// Server is a managed MariaDB server.
type Server struct {
	dir      string
	st       state
	password string
	// Restored are the settings a killed tunebench process left, which
	// Start restored.
	Restored []Applied
}

type state struct {
	// UserMade: tunebench's user exists (a first start stopped before
	// it is resumed by the next).
	UserMade bool   `json:"user_made"`
	Port     int    `json:"port"`
	RunAs    string `json:"run_as,omitempty"`
	Bin      string `json:"bin"`
	Version  string `json:"version"`
}

// Dir is the server's directory.
func (s *Server) Dir() string { return s.dir }

// Port is where it listens on 127.0.0.1.
func (s *Server) Port() int { return s.st.Port }

// Version is the server's version line (mariadbd --version).
func (s *Server) Version() string { return s.st.Version }

// ClientFile is the option file the mariadb client tools take
// (--defaults-extra-file): user, password, host and port.
func (s *Server) ClientFile() string { return filepath.Join(s.dir, clientFile) }

// Config is the connection to database db (""; none) as tunebench's user
// over TCP.
func (s *Server) Config(db string) *mysql.Config {
	c := mysql.NewConfig()
	c.User, c.Passwd, c.Net, c.Addr, c.DBName = User, s.password, "tcp", "127.0.0.1:"+strconv.Itoa(s.st.Port), db
	c.AllowNativePasswords = true
	c.ParseTime = true
	return c
}

// Open is a connection pool to database db.
func (s *Server) Open(db string) (*sql.DB, error) {
	conn, err := mysql.NewConnector(s.Config(db))
	if err != nil {
		return nil, err
	}
	return sql.OpenDB(conn), nil
}

// binaries finds mariadbd and mariadb-install-db.
func binaries(dir string) (string, error) {
	cands := []string{dir}
	if dir == "" {
		if p, err := exec.LookPath("mariadbd"); err == nil {
			cands = []string{filepath.Dir(p)}
		}
		cands = append(cands, "/usr/sbin", "/usr/local/sbin")
	}
	for _, d := range cands {
		if d == "" {
			continue
		}
		if _, err := os.Stat(filepath.Join(d, "mariadbd")); err == nil {
			return d, nil
		}
	}
	return "", errs.New(errs.KindEnvironment, "install it: apt-get install mariadb-server (make quickstart does), or give the directory of mariadbd",
		"mariadbd not found (looked in %s)", strings.Join(cands, ", "))
}

// installDB is mariadb-install-db, next to mariadbd or on the PATH.
func installDB(bin string) (string, error) {
	for _, p := range []string{filepath.Join(bin, "mariadb-install-db"), filepath.Join(filepath.Dir(bin), "bin", "mariadb-install-db")} {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	if p, err := exec.LookPath("mariadb-install-db"); err == nil {
		return p, nil
	}
	return "", errs.New(errs.KindEnvironment, "install mariadb-server", "mariadb-install-db not found")
}

// Start makes the server's directory on first use (mariadb-install-db,
// tunebench's user with a generated password) and starts the server,
// waiting until tunebench's user can connect. A server already running in
// the directory is attached to.
func Start(ctx context.Context, o Options) (*Server, error) {
	if o.Dir == "" {
		return nil, errs.Usage("give the server's directory", "no directory for the managed MariaDB")
	}
	dir, err := filepath.Abs(o.Dir)
	if err != nil {
		return nil, err
	}
	s := &Server{dir: dir}
	if b, err := os.ReadFile(filepath.Join(dir, stateFile)); err == nil {
		if err := json.Unmarshal(b, &s.st); err != nil {
			return nil, errs.Wrap(errs.KindEnvironment, err, "move the directory away to make a new server", "%s is damaged", filepath.Join(dir, stateFile))
		}
		pw, err := os.ReadFile(filepath.Join(dir, passFile))
		if err != nil {
			return nil, errs.Wrap(errs.KindEnvironment, err, "", "reading the password of the server in %s", dir)
		}
		s.password = strings.TrimSpace(string(pw))
	}
	if o.Bin != "" || s.st.Bin == "" {
		if s.st.Bin, err = binaries(o.Bin); err != nil {
			return nil, err
		}
	}
	if s.running() {
		if err := s.waitReady(ctx, 30*time.Second); err != nil {
			return nil, err
		}
		s.Restored, err = s.RestoreLeftovers(ctx)
		return s, err
	}
	if o.Port != 0 {
		s.st.Port = o.Port
	}
	if s.st.Port == 0 {
		if s.st.Port, err = server.FreePort(); err != nil {
			return nil, err
		}
	}
	if err := server.CheckPortFree(s.st.Port); err != nil {
		return nil, err
	}
	if o.RunAs != "" {
		s.st.RunAs = o.RunAs
	}
	if os.Geteuid() == 0 && s.st.RunAs == "" {
		s.st.RunAs = "mysql"
	}
	if err := checkReachable(dir, s.st.RunAs); err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(dir, dataSubdir, "mysql")); errors.Is(err, os.ErrNotExist) {
		if err := s.initialize(ctx); err != nil {
			return nil, err
		}
	}
	// Saved now: a first start that stops before the user is made is
	// resumed by the next (UserMade false).
	if err := s.save(); err != nil {
		return nil, err
	}
	for _, sub := range []string{tmpSubdir, runSubdir, fileSubdir} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o750); err != nil {
			return nil, err
		}
		if err := s.own(filepath.Join(dir, sub), 0o750); err != nil {
			return nil, err
		}
	}
	if err := s.writeOptions(); err != nil {
		return nil, err
	}
	if err := s.launch(); err != nil {
		return nil, err
	}
	if !s.st.UserMade {
		if err := s.makeUser(ctx); err != nil {
			return nil, errors.Join(err, s.Stop(context.WithoutCancel(ctx)))
		}
		s.st.UserMade = true
	}
	if err := s.waitReady(ctx, 60*time.Second); err != nil {
		return nil, errors.Join(err, s.Stop(context.WithoutCancel(ctx)))
	}
	if err := s.save(); err != nil {
		return nil, err
	}
	// A new start has lost every SET GLOBAL: the dynamic values the
	// journal says are in force (their holders live) are set again.
	if live, err := s.liveEntries(); err != nil {
		return nil, err
	} else if err := s.setGlobals(ctx, live); err != nil {
		return nil, err
	}
	s.Restored, err = s.RestoreLeftovers(ctx)
	return s, err
}

// initialize runs mariadb-install-db into DIR/data, owned by the run-as
// user, and makes the password.
func (s *Server) initialize(ctx context.Context) error {
	if err := os.MkdirAll(filepath.Join(s.dir, dataSubdir), 0o750); err != nil {
		return errs.Wrap(errs.KindEnvironment, err, "", "making %s", s.dir)
	}
	// The directory stays tunebench's (its option files are written as
	// root); the server's user owns data/, tmp/ and run/ only.
	if err := os.Chmod(s.dir, 0o755); err != nil {
		return errs.Wrap(errs.KindEnvironment, err, "", "chmod %s", s.dir)
	}
	if err := s.own(filepath.Join(s.dir, dataSubdir), 0o750); err != nil {
		return err
	}
	// A server starting removes the #sql* temporary files it finds in its
	// tmpdir: servers sharing /tmp remove each other's (seen as "Unknown
	// table mysql.tmp_user_sys" when two bootstraps run at once). Each
	// has its own, the bootstrap too.
	if err := os.MkdirAll(filepath.Join(s.dir, tmpSubdir), 0o750); err != nil {
		return err
	}
	if err := s.own(filepath.Join(s.dir, tmpSubdir), 0o750); err != nil {
		return err
	}
	tool, err := installDB(s.st.Bin)
	if err != nil {
		return err
	}
	args := []string{"--no-defaults", "--datadir=" + filepath.Join(s.dir, dataSubdir), "--auth-root-authentication-method=normal",
		"--skip-test-db", "--skip-name-resolve", "--tmpdir=" + filepath.Join(s.dir, tmpSubdir)}
	if s.st.RunAs != "" {
		args = append(args, "--user="+s.st.RunAs)
	}
	cmd := exec.CommandContext(ctx, tool, args...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return errs.Wrap(errs.KindEnvironment, err, "see the output above; the directory must be empty and writable by "+orMe(s.st.RunAs),
			"mariadb-install-db in %s failed: %s", s.dir, errorLines(string(out)))
	}
	pw := make([]byte, 18)
	if _, err := rand.Read(pw); err != nil {
		return err
	}
	s.password = base64.RawURLEncoding.EncodeToString(pw)
	return os.WriteFile(filepath.Join(s.dir, passFile), []byte(s.password+"\n"), 0o600)
}

func orMe(u string) string {
	if u == "" {
		return "this user"
	}
	return u
}

// own gives path to the run-as user (when tunebench runs as root).
func (s *Server) own(path string, mode os.FileMode) error {
	if err := os.Chmod(path, mode); err != nil {
		return errs.Wrap(errs.KindEnvironment, err, "", "chmod %s", path)
	}
	if s.st.RunAs == "" {
		return nil
	}
	u, err := user.Lookup(s.st.RunAs)
	if err != nil {
		return errs.Wrap(errs.KindEnvironment, err, "create the user, or give another one to run the server as", "no user %s to run MariaDB as", s.st.RunAs)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if err := os.Chown(path, uid, gid); err != nil {
		return errs.Wrap(errs.KindEnvironment, err, "", "chown %s", path)
	}
	return nil
}

// writeOptions writes my.cnf (the server's options, the settings file
// included) and client.cnf (the client tools' user and password).
func (s *Server) writeOptions() error {
	settings := filepath.Join(s.dir, settingsFile)
	if _, err := os.Stat(settings); errors.Is(err, os.ErrNotExist) {
		if err := os.WriteFile(settings, []byte("# settings tunebench applies with a restart\n[mariadbd]\n"), 0o644); err != nil {
			return err
		}
	}
	opts := fmt.Sprintf(`# written by tunebench; settings go in %s
[mariadbd]
datadir=%s
socket=%s
port=%d
bind-address=127.0.0.1
pid-file=%s
log-error=%s
tmpdir=%s
secure_file_priv=%s
skip-name-resolve
!include %s
`, settingsFile, filepath.Join(s.dir, dataSubdir), filepath.Join(s.dir, socketFile), s.st.Port,
		filepath.Join(s.dir, pidFile), filepath.Join(s.dir, logFile), filepath.Join(s.dir, tmpSubdir), filepath.Join(s.dir, fileSubdir), settings)
	if s.st.RunAs != "" {
		opts = strings.Replace(opts, "skip-name-resolve\n", "skip-name-resolve\nuser="+s.st.RunAs+"\n", 1)
	}
	if err := os.WriteFile(filepath.Join(s.dir, optionFile), []byte(opts), 0o644); err != nil {
		return errs.Wrap(errs.KindEnvironment, err, "", "writing the server's options")
	}
	client := fmt.Sprintf("[client]\nuser=%s\npassword=%s\nhost=127.0.0.1\nport=%d\n", User, s.password, s.st.Port)
	return os.WriteFile(filepath.Join(s.dir, clientFile), []byte(client), 0o600)
}

// launch starts mariadbd in a session of its own, its output in the log.
func (s *Server) launch() error {
	log, err := os.OpenFile(filepath.Join(s.dir, "mariadbd.out"), os.O_CREATE|os.O_WRONLY|os.O_APPEND|syscallNoFollow, 0o644)
	if err != nil {
		return err
	}
	defer log.Close()
	cmd := exec.Command(filepath.Join(s.st.Bin, "mariadbd"), "--defaults-file="+filepath.Join(s.dir, optionFile))
	cmd.Stdout, cmd.Stderr = log, log
	detach(cmd)
	if err := cmd.Start(); err != nil {
		return errs.Wrap(errs.KindEnvironment, err, "", "starting mariadbd")
	}
	go cmd.Wait() //nolint:errcheck // reaped; the server outlives this process
	return nil
}

// pid is the server's pid from its pid file (0: none running).
func (s *Server) pid() int {
	b, err := os.ReadFile(filepath.Join(s.dir, pidFile))
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if n <= 0 || !proc.Alive(n, 0) {
		return 0
	}
	// A pid file left by a crash may name a pid reused by another
	// process: only a mariadbd is this server.
	if comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", n)); err == nil && strings.TrimSpace(string(comm)) != "mariadbd" {
		return 0
	}
	return n
}

func (s *Server) running() bool { return s.pid() != 0 }

// makeUser connects as root through the socket (a new server's root has
// no password and takes no TCP login) and makes tunebench's user.
func (s *Server) makeUser(ctx context.Context) error {
	var db *sql.DB
	var err error
	deadline := time.Now().Add(60 * time.Second)
	for {
		// root has no password on a new server; an earlier first start
		// that stopped half-way may have given it ours.
		for _, pw := range []string{"", s.password} {
			c := mysql.NewConfig()
			c.User, c.Passwd, c.Net, c.Addr = "root", pw, "unix", filepath.Join(s.dir, socketFile)
			c.AllowNativePasswords = true
			conn, cerr := mysql.NewConnector(c)
			if cerr != nil {
				return cerr
			}
			db = sql.OpenDB(conn)
			if err = db.PingContext(ctx); err == nil {
				break
			}
			db.Close()
		}
		if err == nil || time.Now().After(deadline) || ctx.Err() != nil {
			break
		}
		if !s.running() && time.Since(deadline.Add(-60*time.Second)) > 5*time.Second {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		return s.startError(err)
	}
	defer db.Close()
	// Only root@localhost (by the socket, with our password), the
	// server's own mariadb.sys and tunebench's user may log in: the other
	// root accounts mariadb-install-db makes (127.0.0.1, ::1, the host
	// name) have no password.
	rows, err := db.QueryContext(ctx, "SELECT User, Host FROM mysql.user")
	if err != nil {
		return errs.Wrap(errs.KindConnect, err, "", "reading the new server's accounts")
	}
	var drop []string
	for rows.Next() {
		var u, h string
		if err := rows.Scan(&u, &h); err != nil {
			rows.Close()
			return err
		}
		if (u == "root" && h == "localhost") || u == "mariadb.sys" || u == User {
			continue
		}
		drop = append(drop, "'"+strings.ReplaceAll(u, "'", "''")+"'@'"+strings.ReplaceAll(h, "'", "''")+"'")
	}
	rows.Close()
	for _, a := range drop {
		if _, err := db.ExecContext(ctx, "DROP USER "+a); err != nil {
			return errs.Wrap(errs.KindConnect, err, "", "dropping the account %s", a)
		}
	}
	quoted := strings.ReplaceAll(s.password, "'", "''")
	for _, q := range []string{
		"CREATE USER IF NOT EXISTS '" + User + "'@'127.0.0.1' IDENTIFIED BY '" + quoted + "'",
		"GRANT ALL PRIVILEGES ON *.* TO '" + User + "'@'127.0.0.1' WITH GRANT OPTION",
		"CREATE USER IF NOT EXISTS '" + User + "'@'localhost' IDENTIFIED BY '" + quoted + "'",
		"GRANT ALL PRIVILEGES ON *.* TO '" + User + "'@'localhost' WITH GRANT OPTION",
		"ALTER USER 'root'@'localhost' IDENTIFIED BY '" + quoted + "'",
		"CREATE DATABASE IF NOT EXISTS " + DefaultDatabase,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return errs.Wrap(errs.KindConnect, err, "", "making tunebench's user on the new server")
		}
	}
	return nil
}

// waitReady waits until tunebench's user can connect over TCP.
func (s *Server) waitReady(ctx context.Context, limit time.Duration) error {
	db, err := s.Open("")
	if err != nil {
		return err
	}
	defer db.Close()
	t0 := time.Now()
	for {
		err = db.PingContext(ctx)
		if err == nil {
			return s.readVersion(ctx, db)
		}
		if ctx.Err() != nil || time.Since(t0) > limit || (!s.running() && time.Since(t0) > 5*time.Second) {
			return s.startError(err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (s *Server) readVersion(ctx context.Context, db *sql.DB) error {
	return db.QueryRowContext(ctx, "SELECT VERSION()").Scan(&s.st.Version)
}

// startError says why the server is not up, with the end of its log.
func (s *Server) startError(err error) error {
	b, _ := os.ReadFile(filepath.Join(s.dir, logFile))
	return errs.Wrap(errs.KindConnect, err, "see "+filepath.Join(s.dir, logFile),
		"the managed MariaDB in %s did not start: %s", s.dir, human.LastLines(string(b), 3))
}

func (s *Server) save() error {
	b, err := json.MarshalIndent(s.st, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(s.dir, stateFile), append(b, '\n'), 0o644)
}

// Stop shuts the server down (SIGTERM: InnoDB's clean shutdown) and waits
// until it has exited.
func (s *Server) Stop(ctx context.Context) error {
	pid := s.pid()
	if pid == 0 {
		return nil
	}
	if err := terminate(pid); err != nil {
		return errs.Wrap(errs.KindEnvironment, err, "", "stopping the managed MariaDB (pid %d)", pid)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for proc.Alive(pid, 0) {
		if time.Now().After(deadline) || ctx.Err() != nil {
			return errs.New(errs.KindEnvironment, fmt.Sprintf("see %s; kill %d if it hangs", filepath.Join(s.dir, logFile), pid),
				"the managed MariaDB (pid %d) did not stop", pid)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return nil
}

// checkReachable checks that the server's OS user can reach dir: every
// directory above it must be searchable by others (it is not in
// tunebench's group).
func checkReachable(dir, runAs string) error {
	if runAs == "" {
		return nil
	}
	for d := filepath.Dir(dir); ; d = filepath.Dir(d) {
		if fi, err := os.Stat(d); err == nil && fi.Mode().Perm()&0o001 == 0 {
			return errs.Usage(fmt.Sprintf("chmod o+x %s, or put the server's directory elsewhere (e.g. /var/tmp/tunebench)", d),
				"the MariaDB server runs as %s, which cannot reach %s: %s is not searchable by others", runAs, dir, d)
		}
		if d == filepath.Dir(d) {
			return nil
		}
	}
}

// liveEntries are the journal's values held by live processes.
func (s *Server) liveEntries() ([]Applied, error) {
	all, err := s.readJournal()
	if err != nil {
		return nil, err
	}
	var out []Applied
	for _, a := range all {
		if a.Holder.Alive() {
			out = append(out, a)
		}
	}
	return out, nil
}

// errorLines are the [ERROR] lines of a MariaDB tool's output, else its
// last lines.
func errorLines(out string) string {
	var errsOut []string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "[ERROR]") {
			errsOut = append(errsOut, strings.TrimSpace(l))
		}
	}
	if len(errsOut) > 0 {
		return strings.Join(errsOut, " | ")
	}
	return human.LastLines(out, 5)
}
