package server

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/tunebench/tunebench/internal/errs"
	"github.com/tunebench/tunebench/internal/human"
	"github.com/tunebench/tunebench/internal/machine"
)

// childEnv is the environment for initdb/pg_ctl/postgres: ours without PG*
// variables (PGDATA, PGPORT, PGPASSWORD ...) and locale settings, in the C locale.
func childEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "PG") || strings.HasPrefix(k, "LC_") || k == "LANG" || k == "LANGUAGE" {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "LC_ALL=C")
}

func (s *Server) command(ctx context.Context, prog string, args ...string) *exec.Cmd {
	closeInherited()
	cmd := exec.CommandContext(ctx, s.bins.Path(prog), args...)
	cmd.Dir = s.dir
	cmd.Env = childEnv()
	cmd.SysProcAttr = s.user.sysProcAttr()
	cmd.WaitDelay = 5 * time.Second
	if s.wrap != nil {
		if err := s.wrap(cmd); err != nil {
			cmd.Err = err // Start returns it
		}
	}
	return cmd
}

// initdb creates the data directory, the pgpass file and the base config.
func (s *Server) initdb(ctx context.Context, password string, noSync bool, walDir string) error {
	dataDir := s.DataDir()
	if entries, err := os.ReadDir(dataDir); err == nil && len(entries) > 0 {
		return errs.Usage(fmt.Sprintf("remove %s or choose another --dir", dataDir),
			"%s is not empty but holds no PostgreSQL data directory (no PG_VERSION)", dataDir)
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return errs.Wrap(errs.KindEnvironment, err, "choose another --dir", "cannot create %s", dataDir)
	}
	if err := os.Chmod(dataDir, 0o700); err != nil {
		return errs.Wrap(errs.KindEnvironment, err, "", "chmod %s", dataDir)
	}
	if err := s.user.chown(dataDir); err != nil {
		return errs.Wrap(errs.KindEnvironment, err, "", "cannot give %s to %s", dataDir, s.user.Name)
	}
	if password == "" {
		var err error
		if password, err = randomPassword(); err != nil {
			return err
		}
	}
	pw, err := os.CreateTemp(s.dir, ".initdb-pw-*")
	if err != nil {
		return errs.Wrap(errs.KindEnvironment, err, "", "cannot write the initdb password file")
	}
	pwPath := pw.Name()
	defer os.Remove(pwPath)
	_, err = pw.WriteString(password + "\n")
	if cerr := pw.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = s.user.chown(pwPath)
	}
	if err != nil {
		return errs.Wrap(errs.KindEnvironment, err, "", "cannot write the initdb password file")
	}

	args := []string{"-D", dataDir, "-U", Superuser, "-E", "UTF8", "--locale=C",
		"--auth-local=trust", "--auth-host=scram-sha-256", "--pwfile=" + pwPath}
	if noSync {
		args = append(args, "--no-sync")
	}
	if walDir != "" {
		if !filepath.IsAbs(walDir) {
			return errs.Usage("give an absolute path", "WAL directory %q is not absolute", walDir)
		}
		if entries, err := os.ReadDir(walDir); err == nil && len(entries) > 0 {
			return errs.Usage("give an empty directory for the WAL", "WAL directory %s is not empty", walDir)
		}
		// initdb runs as the server's user: it must own the directory.
		if err := os.MkdirAll(walDir, 0o700); err != nil {
			return errs.Wrap(errs.KindEnvironment, err, "", "cannot create the WAL directory %s", walDir)
		}
		if err := os.Chmod(walDir, 0o700); err != nil {
			return errs.Wrap(errs.KindEnvironment, err, "", "chmod %s", walDir)
		}
		if err := s.user.chown(walDir); err != nil {
			return errs.Wrap(errs.KindEnvironment, err, "", "cannot give %s to %s", walDir, s.user.Name)
		}
		args = append(args, "--waldir="+walDir)
	}
	s.logf("initdb %s (PostgreSQL %s, as OS user %s)", dataDir, s.bins.Version, s.user.Name)
	t0 := time.Now()
	out, err := s.command(ctx, "initdb", args...).CombinedOutput()
	if err != nil {
		return errs.Wrap(errs.KindEnvironment, err, "fix the problem initdb reports, or choose another --dir",
			"initdb failed for %s:\n%s", dataDir, lastLines(string(out), 20))
	}
	s.logf("initdb done in %.1fs", time.Since(t0).Seconds())
	if err := writeFileAtomic(s.PassFile(), []byte(pgpassLine(password, s.st.Listen)), 0o600); err != nil {
		return err
	}
	s.password = password
	return nil
}

// loadPassword reads the password of an existing dir from its pgpass file;
// given (from Options.Password) recreates a missing file and must match an existing one.
func (s *Server) loadPassword(given string) error {
	pw, err := readPgpass(s.PassFile())
	switch {
	case err == nil:
		if given != "" && given != pw {
			return errs.Usage("omit --password: the superuser password is fixed when the dir is created",
				"the password given differs from the one recorded in %s", s.PassFile())
		}
		s.password = pw
		// A listen address given since: clients that connect there need
		// its line too.
		if s.st.Listen != "" && !pgpassHas(s.PassFile(), s.st.Listen) {
			return writeFileAtomic(s.PassFile(), []byte(pgpassLine(pw, s.st.Listen)), 0o600)
		}
		return nil
	case given != "":
		if err := writeFileAtomic(s.PassFile(), []byte(pgpassLine(given, s.st.Listen)), 0o600); err != nil {
			return err
		}
		s.password = given
		return nil
	default:
		return errs.Wrap(errs.KindEnvironment, err, "give the superuser password again with --password to recreate the file",
			"cannot read the superuser password from %s", s.PassFile())
	}
}

func randomPassword() (string, error) {
	b := make([]byte, 18) // 24 base64 characters
	if _, err := rand.Read(b); err != nil {
		return "", errs.Wrap(errs.KindInternal, err, "", "generating a password")
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// writeBaseConfig writes tunebench.conf (listen address, port, socket dir and
// the recorded base settings) and makes postgresql.conf include it.
func (s *Server) writeBaseConfig() error {
	dataDir := s.DataDir()
	s.mu.Lock()
	port, extra, listen := s.st.Port, append([]Setting(nil), s.st.Config...), s.st.Listen
	s.mu.Unlock()

	var b strings.Builder
	b.WriteString("# Written by tunebench at every start; edits are overwritten.\n")
	addrs := "127.0.0.1"
	if listen != "" {
		addrs += "," + listen
		if err := s.allowSamenet(); err != nil {
			return err
		}
	}
	fmt.Fprintf(&b, "listen_addresses = '%s'\nport = %d\n", addrs, port)
	fmt.Fprintf(&b, "unix_socket_directories = %s\n", confQuote(socketDir(dataDir, port)))
	b.WriteString("logging_collector = off\n")
	b.WriteString("lc_messages = 'C'\n")
	for _, c := range extra {
		fmt.Fprintf(&b, "%s = %s\n", c.Name, confQuote(c.Value))
	}
	inc := filepath.Join(dataDir, confInclude)
	if err := writeFileAtomic(inc, []byte(b.String()), 0o600); err != nil {
		return err
	}
	if err := s.user.chown(inc); err != nil {
		return errs.Wrap(errs.KindEnvironment, err, "", "chown %s", inc)
	}

	line := "include_if_exists = '" + confInclude + "'"
	return appendOnce(filepath.Join(dataDir, "postgresql.conf"), line,
		"\n# Added by tunebench: listen address, port and base settings.\n"+line+"\n")
}

// appendOnce appends text to the file at path unless the file already
// contains marker.
func appendOnce(path, marker, text string) error {
	content, err := os.ReadFile(path)
	if err != nil {
		return errs.Wrap(errs.KindEnvironment, err, "", "reading %s", path)
	}
	if strings.Contains(string(content), marker) {
		return nil
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return errs.Wrap(errs.KindEnvironment, err, "", "writing %s", path)
	}
	_, err = f.WriteString(text)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return errs.Wrap(errs.KindEnvironment, err, "", "writing %s", path)
	}
	return nil
}

// hbaSamenet is the pg_hba.conf line a server with a listen address gets:
// password clients from the networks the server's machine is on.
const hbaSamenet = "host all all samenet scram-sha-256 # tunebench: Options.Listen"

// allowSamenet adds hbaSamenet to pg_hba.conf once.
func (s *Server) allowSamenet() error {
	return appendOnce(filepath.Join(s.DataDir(), "pg_hba.conf"), hbaSamenet, "\n"+hbaSamenet+"\n")
}

// socketDir is the unix socket directory: the data dir, or "" (no unix
// socket) when the socket path would exceed the 107-byte limit or the path
// has characters the setting's list syntax would split or mangle.
func socketDir(dataDir string, port int) string {
	sock := filepath.Join(dataDir, ".s.PGSQL."+strconv.Itoa(port))
	if len(sock) > maxSocketPath() || strings.ContainsAny(dataDir, ",'\"\\ \t") {
		return ""
	}
	return dataDir
}

// maxSocketPath is the longest Unix socket path the system takes
// (sockaddr_un's sun_path less its NUL: 108 bytes on Linux, 104 on macOS).
func maxSocketPath() int {
	if runtime.GOOS == "darwin" {
		return 103
	}
	return 107
}

// confQuote quotes a value for postgresql.conf.
func confQuote(v string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `''`).Replace(v) + "'"
}

// conninfoQuote quotes a conninfo value when needed.
func conninfoQuote(v string) string {
	if v != "" && !strings.ContainsAny(v, " \t\n'\\") {
		return v
	}
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(v) + "'"
}

func (s *Server) ensureLogDir() error {
	logDir := filepath.Join(s.dir, logSubdir)
	if err := os.MkdirAll(logDir, 0o750); err != nil {
		return errs.Wrap(errs.KindEnvironment, err, "", "cannot create %s", logDir)
	}
	if err := s.user.chown(logDir); err != nil {
		return errs.Wrap(errs.KindEnvironment, err, "", "cannot give %s to %s", logDir, s.user.Name)
	}
	if fileExists(s.LogPath()) {
		if err := s.user.chown(s.LogPath()); err != nil {
			return errs.Wrap(errs.KindEnvironment, err, "", "cannot give %s to %s", s.LogPath(), s.user.Name)
		}
	}
	return nil
}

// startLocked writes the base config, runs pg_ctl start and waits until ready.
func (s *Server) startLocked(ctx context.Context) error {
	if err := s.writeBaseConfig(); err != nil {
		return err
	}
	if err := s.ensureLogDir(); err != nil {
		return err
	}
	logSize := fileSize(s.LogPath())
	port := s.Port()
	s.logf("starting PostgreSQL %s on 127.0.0.1:%d (data %s, log %s)", s.bins.Version, port, s.DataDir(), s.LogPath())
	out, err := s.command(ctx, "pg_ctl", "start", "-D", s.DataDir(), "-l", s.LogPath(),
		"-w", "-t", strconv.Itoa(int(ReadyTimeout/time.Second)), "-s").CombinedOutput()
	if err != nil {
		return s.startError("PostgreSQL did not start", err, out, logSize, false)
	}
	return s.afterStart(ctx, "started", logSize)
}

// afterStart waits for connections and records the new pid.
func (s *Server) afterStart(ctx context.Context, verb string, logSize int64) error {
	if err := s.waitReady(ctx); err != nil {
		return s.startError("PostgreSQL does not accept connections", err, nil, logSize, false)
	}
	pf, _, _ := readPidFile(s.DataDir())
	s.mu.Lock()
	s.st.PID = pf.PID
	s.st.StartedAt = time.Now().UTC()
	s.st.StoppedAt = time.Time{}
	port := s.st.Port
	s.mu.Unlock()
	s.logf("%s on port %d (pid %d)", verb, port, pf.PID)
	return s.save()
}

func (s *Server) startError(what string, err error, out []byte, logSize int64, restart bool) error {
	f := &startFailure{What: fmt.Sprintf("%s (data %s, port %d)", what, s.DataDir(), s.Port()), LogPath: s.LogPath()}
	for _, line := range strings.Split(string(out), "\n") {
		if line = strings.TrimSpace(line); line != "" {
			f.Detail = line
			break
		}
	}
	if f.Detail == "" && err != nil {
		f.Detail = err.Error()
	}
	tail := tailSince(s.LogPath(), logSize, 200)
	if restart {
		tail = afterShutdown(tail)
	}
	f.Tail = lastLines(tail, 20)
	if strings.Contains(tail, "No space left on device") {
		// Crash recovery (or the start) needs room for WAL: nothing is
		// wrong with the server but the full filesystem.
		wal := filepath.Join(s.DataDir(), "pg_wal")
		if dir, err := filepath.EvalSymlinks(wal); err == nil {
			wal = dir // a WAL directory elsewhere: its filesystem is the one that matters
		}
		sp := spaceOf(wal)
		return errs.Wrap(errs.KindEnvironment, f, fmt.Sprintf("the filesystem of the server's WAL is full (%s): PostgreSQL needs room for its WAL (a 16 MB segment, more to finish a crash recovery) before it can start. "+
			"Free space on it, from files that are not the server's (never remove anything in %s: its WAL and tables are the database), or grow the filesystem (or move the directory to a larger one while the server is down); "+
			"then `tunebench server start --dir %s`, and free the load's space with a smaller load and --drop", sp, s.DataDir(), s.dir), "")
	}
	return errs.Wrap(errs.KindConnect, f, "fix the problem the server log shows, then start again", "")
}

// spaceOf says how much of dir's filesystem is free.
func spaceOf(dir string) string {
	if free, ok := machine.FreeBytes(dir); ok {
		return human.Bytes(free) + " free"
	}
	return "its free space not known here"
}

// startFailure is a server that did not start or answer, with the end of its log.
type startFailure struct {
	What    string // what failed, with the data dir and port
	Detail  string // pg_ctl's message or the connection error
	LogPath string
	Tail    string // last lines of the server log written by this attempt
}

func (e *startFailure) Error() string {
	msg := e.What
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	if e.Tail != "" {
		msg += "\nlast lines of " + e.LogPath + ":\n" + e.Tail
	}
	return msg
}

// afterShutdown drops the log lines of the stop half of a restart: it keeps
// what follows the last "database system is shut down" that is not the final line.
func afterShutdown(tail string) string {
	lines := strings.Split(strings.TrimRight(tail, "\n"), "\n")
	for i := len(lines) - 2; i >= 0; i-- {
		if strings.Contains(lines[i], "database system is shut down") {
			return strings.Join(lines[i+1:], "\n")
		}
	}
	return tail
}

// waitReady polls with pgx until a connection succeeds or ReadyTimeout passes.
func (s *Server) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, ReadyTimeout)
	defer cancel()
	var last error
	for {
		cctx, ccancel := context.WithTimeout(ctx, 5*time.Second)
		conn, err := s.Connect(cctx)
		if err == nil {
			_ = conn.Close(cctx)
			ccancel()
			return nil
		}
		ccancel()
		last = err
		if !s.running() {
			return errs.Wrap(errs.KindConnect, last, "", "the server process exited")
		}
		select {
		case <-ctx.Done():
			return errs.Wrap(errs.KindConnect, last, "", "no connection within %s", ReadyTimeout)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// restartLocked runs pg_ctl restart and waits until ready.
func (s *Server) restartLocked(ctx context.Context, mode string) error {
	if err := s.ensureLogDir(); err != nil {
		return err
	}
	logSize := fileSize(s.LogPath())
	s.logf("restarting PostgreSQL (%s)", mode)
	out, err := s.command(ctx, "pg_ctl", "restart", "-D", s.DataDir(), "-l", s.LogPath(), "-m", mode,
		"-w", "-t", strconv.Itoa(int(ReadyTimeout/time.Second)), "-s").CombinedOutput()
	if err != nil {
		return s.startError("PostgreSQL did not restart", err, out, logSize, true)
	}
	return s.afterStart(ctx, "restarted", logSize)
}

// stopLocked restores applied settings (unless immediate) and runs pg_ctl stop.
func (s *Server) stopLocked(ctx context.Context, mode string) error {
	applied := s.applied()
	if !s.running() {
		s.logf("the server in %s is not running", s.dir)
		if mode != "immediate" && len(applied) > 0 {
			if err := s.offlineRestore(applied); err != nil {
				return err
			}
			s.logf("restored %s in postgresql.auto.conf", appliedNames(applied))
		}
		s.mu.Lock()
		s.st.PID = 0
		if mode != "immediate" {
			s.st.Applied = nil
		}
		s.mu.Unlock()
		return s.save()
	}
	var restoreErr error
	if mode != "immediate" && len(applied) > 0 {
		// Rewrite and reload only: the stop makes restart-only settings effective.
		restoreErr = restore(ctx, s.Connect, nil, applied, false)
		if restoreErr == nil {
			s.logf("restored %s", appliedNames(applied))
		}
	}
	s.logf("stopping PostgreSQL (%s)", mode)
	out, err := s.command(ctx, "pg_ctl", "stop", "-D", s.DataDir(), "-m", mode,
		"-w", "-t", strconv.Itoa(int(ReadyTimeout/time.Second)), "-s").CombinedOutput()
	if err != nil {
		hint := "check the server log " + s.LogPath()
		if mode == "smart" {
			hint = "smart mode waits for clients to disconnect; use fast mode to disconnect them"
		}
		return errs.Wrap(errs.KindConnect, err, hint, "stopping the server in %s failed: %s", s.dir, lastLines(strings.TrimSpace(string(out)), 5))
	}
	if mode != "immediate" && len(applied) > 0 {
		if restoreErr != nil {
			s.logf("restoring settings over SQL failed (%v); undoing them in postgresql.auto.conf", restoreErr)
			if err := s.offlineRestore(applied); err != nil {
				return err
			}
		}
		s.mu.Lock()
		s.st.Applied = nil
		s.mu.Unlock()
	}
	s.mu.Lock()
	s.st.PID = 0
	s.st.StoppedAt = time.Now().UTC()
	s.mu.Unlock()
	s.logf("stopped")
	return s.save()
}

// offlineRestore undoes applied settings by editing postgresql.auto.conf while
// the server is down: it drops their lines and writes back earlier values.
func (s *Server) offlineRestore(applied []Applied) error {
	if s.running() {
		return errs.New(errs.KindInternal, "", "refusing to edit postgresql.auto.conf while the server runs")
	}
	path := filepath.Join(s.DataDir(), "postgresql.auto.conf")
	content, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return errs.Wrap(errs.KindEnvironment, err, "", "reading %s", path)
	}
	drop := map[string]bool{}
	for _, a := range applied {
		drop[strings.ToLower(a.Name)] = true
	}
	var out []string
	for _, line := range strings.Split(strings.TrimRight(string(content), "\n"), "\n") {
		t := strings.TrimSpace(line)
		if t != "" && !strings.HasPrefix(t, "#") {
			name := strings.ToLower(strings.TrimSpace(strings.FieldsFunc(t, func(r rune) bool { return r == '=' || r == ' ' || r == '\t' })[0]))
			if drop[name] {
				continue
			}
		}
		if line != "" || len(out) > 0 {
			out = append(out, line)
		}
	}
	if len(out) == 0 {
		out = append(out, "# Do not edit this file manually!", "# It will be overwritten by the ALTER SYSTEM command.")
	}
	// The first entry of a setting holds the value from before them all
	// (a run's change above the server's lifetime one comes later).
	written := map[string]bool{}
	for _, a := range applied {
		name := strings.ToLower(a.Name)
		if a.HadAuto && !written[name] {
			out = append(out, fmt.Sprintf("%s = %s", name, confQuote(a.AutoPrevious)))
		}
		written[name] = true
	}
	if err := writeFileAtomic(path, []byte(strings.Join(out, "\n")+"\n"), 0o600); err != nil {
		return err
	}
	if err := s.user.chown(path); err != nil {
		return errs.Wrap(errs.KindEnvironment, err, "", "chown %s", path)
	}
	return nil
}

// checkDataVersion compares the data dir's PG_VERSION with the binaries' major version.
func checkDataVersion(dataDir string, bins Binaries) error {
	b, err := os.ReadFile(filepath.Join(dataDir, "PG_VERSION"))
	if err != nil {
		return errs.Wrap(errs.KindEnvironment, err, "", "reading PG_VERSION")
	}
	v := strings.TrimSpace(string(b))
	major, _ := strconv.Atoi(strings.SplitN(v, ".", 2)[0])
	if major != bins.Major {
		return errs.New(errs.KindEnvironment,
			fmt.Sprintf("point --pg-bin at PostgreSQL %s binaries, or use a new --dir", v),
			"data directory %s was created by PostgreSQL %s, but the binaries in %s are %s", dataDir, v, bins.Dir, bins.Version)
	}
	return nil
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func fileSize(path string) int64 {
	st, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return st.Size()
}

// tailSince returns the last n lines written to path after offset (or the
// file's last n lines when it shrank or offset is 0).
func tailSince(path string, offset int64, n int) string {
	if offset <= 0 || fileSize(path) < offset {
		return tailFile(path, n)
	}
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return tailFile(path, n)
	}
	var buf bytes.Buffer
	if _, err := io.Copy(&buf, io.LimitReader(f, 1<<20)); err != nil {
		return tailFile(path, n)
	}
	lines := strings.Split(strings.TrimRight(buf.String(), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// lastLines returns the last n lines of s, indented for an error message.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	for i := range lines {
		lines[i] = "  " + lines[i]
	}
	return strings.Join(lines, "\n")
}
