package server

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/tunebench/tunebench/internal/errs"
)

// MinMajor is the oldest PostgreSQL major version tunebench manages.
const MinMajor = 10

// requiredBinaries are the programs a bin dir must hold.
func requiredBinaries() []string { return []string{"initdb", "pg_ctl", "postgres"} }

// Binaries is a PostgreSQL installation: the directory holding initdb, pg_ctl
// and postgres, and the version those report.
type Binaries struct {
	Dir     string // absolute bin directory
	Version string // e.g. "15.18"
	Major   int    // e.g. 15
}

// Path returns the full path of one program in the bin dir.
func (b Binaries) Path(prog string) string { return filepath.Join(b.Dir, prog) }

// finder holds what FindBinaries consults, so that tests can replace it.
type finder struct {
	lookPath  func(string) (string, error)
	globRoots []string // glob patterns for bin dirs, searched newest first
	osRelease string   // path of os-release
}

func defaultFinder() finder {
	return finder{
		lookPath: exec.LookPath,
		globRoots: []string{
			"/usr/lib/postgresql/*/bin", // Debian, Ubuntu
			"/usr/pgsql-*/bin",          // PGDG packages on Fedora/RHEL
			"/usr/local/pgsql/bin",      // source build default prefix
			// macOS: Homebrew (Apple silicon, then Intel), Postgres.app.
			"/opt/homebrew/opt/postgresql@*/bin",
			"/usr/local/opt/postgresql@*/bin",
			"/Applications/Postgres.app/Contents/Versions/*/bin",
		},
		osRelease: "/etc/os-release",
	}
}

// FindBinaries locates initdb, pg_ctl and postgres. An explicit pgBin must hold
// all three. Otherwise the search order is `pg_config --bindir`, PATH, and the
// newest /usr/lib/postgresql/*/bin (then /usr/pgsql-*/bin, /usr/local/pgsql/bin).
func FindBinaries(pgBin string) (Binaries, error) {
	return defaultFinder().find(pgBin)
}

func (f finder) find(pgBin string) (Binaries, error) {
	if pgBin != "" {
		dir, err := filepath.Abs(pgBin)
		if err != nil {
			return Binaries{}, errs.Wrap(errs.KindUsage, err, "", "bad --pg-bin %q", pgBin)
		}
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			return Binaries{}, errs.New(errs.KindEnvironment,
				"point --pg-bin at the directory that holds initdb, pg_ctl and postgres (e.g. /usr/lib/postgresql/15/bin)",
				"PostgreSQL bin directory %s does not exist or is not a directory", dir)
		}
		if missing := missingIn(dir); len(missing) > 0 {
			return Binaries{}, errs.New(errs.KindEnvironment,
				"point --pg-bin at the directory that holds initdb, pg_ctl and postgres (e.g. /usr/lib/postgresql/15/bin)",
				"PostgreSQL bin directory %s lacks %s", dir, strings.Join(missing, ", "))
		}
		return probe(dir)
	}

	var tried []string
	try := func(dir, how string) (Binaries, bool) {
		if dir == "" {
			return Binaries{}, false
		}
		if len(missingIn(dir)) > 0 {
			tried = append(tried, fmt.Sprintf("%s (%s): incomplete", dir, how))
			return Binaries{}, false
		}
		b, err := probe(dir)
		if err != nil {
			tried = append(tried, fmt.Sprintf("%s (%s): %v", dir, how, err))
			return Binaries{}, false
		}
		return b, true
	}

	// 1. pg_config --bindir
	if pgc, err := f.lookPath("pg_config"); err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		out, err := exec.CommandContext(ctx, pgc, "--bindir").Output()
		cancel()
		if err == nil {
			if b, ok := try(strings.TrimSpace(string(out)), "pg_config --bindir"); ok {
				return b, nil
			}
		}
	}

	// 2. PATH: the real directory of postgres, which must also hold the others.
	if p, err := f.lookPath("postgres"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real
		}
		if b, ok := try(filepath.Dir(p), "PATH"); ok {
			return b, nil
		}
	}

	// 3. Well-known install locations, newest version first.
	for _, pattern := range f.globRoots {
		matches, _ := filepath.Glob(pattern)
		sortNewestFirst(matches)
		for _, dir := range matches {
			if b, ok := try(dir, "default location"); ok {
				return b, nil
			}
		}
	}

	msg := "PostgreSQL server binaries (initdb, pg_ctl, postgres) not found"
	if len(tried) > 0 {
		msg += "; tried " + strings.Join(tried, "; ")
	}
	return Binaries{}, errs.New(errs.KindEnvironment, installHint(readFile(f.osRelease)), "%s", msg)
}

// missingIn lists the required programs that are not executable files in dir.
func missingIn(dir string) []string {
	var missing []string
	for _, prog := range requiredBinaries() {
		st, err := os.Stat(filepath.Join(dir, prog))
		if err != nil || !st.Mode().IsRegular() || st.Mode().Perm()&0o111 == 0 {
			missing = append(missing, prog)
		}
	}
	return missing
}

var versionRe = regexp.MustCompile(`\(PostgreSQL\)\s+(\d+)(?:\.(\d+))?(?:\.(\d+))?`)

// probe runs `postgres --version` in dir and checks the version is supported.
func probe(dir string) (Binaries, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, filepath.Join(dir, "postgres"), "--version").CombinedOutput()
	if err != nil {
		return Binaries{}, errs.Wrap(errs.KindEnvironment, err, "check the PostgreSQL installation or choose another with --pg-bin",
			"running %s --version failed (%s)", filepath.Join(dir, "postgres"), strings.TrimSpace(string(out)))
	}
	b, err := parseVersion(string(out))
	if err != nil {
		return Binaries{}, err
	}
	b.Dir = dir
	if b.Major < MinMajor {
		return Binaries{}, errs.New(errs.KindEnvironment, "install a newer PostgreSQL or choose one with --pg-bin",
			"PostgreSQL %s in %s is too old; tunebench needs %d or newer", b.Version, dir, MinMajor)
	}
	return b, nil
}

// parseVersion reads the output of `postgres --version`.
func parseVersion(out string) (Binaries, error) {
	m := versionRe.FindStringSubmatch(out)
	if m == nil {
		return Binaries{}, errs.New(errs.KindEnvironment, "check the PostgreSQL installation or choose another with --pg-bin",
			"cannot read the PostgreSQL version from %q", strings.TrimSpace(out))
	}
	major, _ := strconv.Atoi(m[1])
	version := m[1]
	if m[2] != "" {
		version += "." + m[2]
	}
	if m[3] != "" {
		version += "." + m[3]
	}
	return Binaries{Version: version, Major: major}, nil
}

// sortNewestFirst orders bin dirs by the numeric version in their path, newest first.
func sortNewestFirst(dirs []string) {
	key := func(dir string) []int {
		var nums []int
		for _, part := range strings.FieldsFunc(dir, func(r rune) bool { return r < '0' || r > '9' }) {
			n, err := strconv.Atoi(part)
			if err == nil {
				nums = append(nums, n)
			}
		}
		return nums
	}
	sort.SliceStable(dirs, func(i, j int) bool {
		a, b := key(dirs[i]), key(dirs[j])
		for k := 0; k < len(a) && k < len(b); k++ {
			if a[k] != b[k] {
				return a[k] > b[k]
			}
		}
		return len(a) > len(b)
	})
}

// installHint names the install command for the platform described by the
// content of /etc/os-release.
func installHint(osRelease string) string {
	ids := osIDs(osRelease)
	const tail = ", or point --pg-bin at the directory that holds initdb, pg_ctl and postgres"
	has := func(names ...string) bool {
		for _, id := range ids {
			for _, n := range names {
				if id == n {
					return true
				}
			}
		}
		return false
	}
	switch {
	case runtime.GOOS == "darwin":
		return "install PostgreSQL with `brew install postgresql@17` (or Postgres.app)" + tail
	case has("debian", "ubuntu"):
		return "install PostgreSQL with `apt-get install postgresql`" + tail
	case has("fedora", "rhel", "centos", "rocky", "almalinux"):
		return "install PostgreSQL with `dnf install postgresql-server`" + tail
	default:
		return "install PostgreSQL (Debian/Ubuntu: `apt-get install postgresql`; Fedora/RHEL: `dnf install postgresql-server`)" + tail
	}
}

// osIDs returns the ID and ID_LIKE words of an os-release file.
func osIDs(content string) []string {
	var ids []string
	for _, line := range strings.Split(content, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), "=")
		if !ok || (k != "ID" && k != "ID_LIKE") {
			continue
		}
		v = strings.Trim(v, `"'`)
		ids = append(ids, strings.Fields(strings.ToLower(v))...)
	}
	return ids
}

func readFile(path string) string {
	b, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return ""
	}
	return string(b)
}

// CheckEnvironment reports whether this machine can run a managed server:
// PostgreSQL binaries are found (see FindBinaries) and, when tunebench runs as
// root, there is an unprivileged OS user to run them as (runAs, else postgres).
// Its errors are KindEnvironment (or KindUsage for a bad runAs).
func CheckEnvironment(pgBin, runAs string) (Binaries, error) {
	b, err := FindBinaries(pgBin)
	if err != nil {
		return b, err
	}
	if _, err := resolveRunUser(runAs); err != nil {
		return b, err
	}
	return b, nil
}
