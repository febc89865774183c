package server

import (
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	"github.com/tunebench/tunebench/internal/errs"
)

// runUser is the OS user that runs initdb, pg_ctl and postgres.
type runUser struct {
	Name   string
	UID    int
	GID    int
	Groups []int // supplementary group ids
	Switch bool  // true when we are root and must switch to this user
}

// resolveRunUser picks the OS user for the server processes. As root: the
// explicit runAs, else `postgres`; never root itself. As another user: that user.
func resolveRunUser(runAs string) (runUser, error) {
	if os.Geteuid() != 0 {
		cur, err := user.Current()
		if err != nil {
			return runUser{}, errs.Wrap(errs.KindEnvironment, err, "", "cannot look up the current user")
		}
		if runAs != "" && runAs != cur.Username && runAs != cur.Uid {
			return runUser{}, errs.New(errs.KindUsage,
				"run tunebench as root to use --run-as, or drop --run-as to run PostgreSQL as "+cur.Username,
				"--run-as %s needs root; tunebench runs as %s", runAs, cur.Username)
		}
		u, err := fromUser(cur)
		if err != nil {
			return runUser{}, err
		}
		return u, nil
	}
	name := runAs
	if name == "" {
		name = "postgres"
	}
	found, err := user.Lookup(name)
	if err != nil {
		if runAs != "" {
			return runUser{}, errs.Wrap(errs.KindEnvironment, err,
				"create it with `useradd --system --create-home "+runAs+"` or name an existing unprivileged user with --run-as",
				"--run-as user %q does not exist", runAs)
		}
		hint := "create it with `useradd --system --create-home postgres`, or name an existing unprivileged user with `--run-as USER`"
		if runtime.GOOS == "darwin" {
			hint = "run tunebench as your own user (not with sudo), or name an existing unprivileged user with `--run-as USER` (macOS has _postgres when a PostgreSQL package made it)"
		}
		return runUser{}, errs.New(errs.KindEnvironment, hint,
			"PostgreSQL refuses to run as root and there is no `postgres` OS user to run it as")
	}
	u, err := fromUser(found)
	if err != nil {
		return runUser{}, err
	}
	if u.UID == 0 {
		return runUser{}, errs.New(errs.KindUsage, "name an unprivileged user with --run-as",
			"PostgreSQL refuses to run as root (user %s has uid 0)", name)
	}
	u.Switch = true
	return u, nil
}

// runUserByID resolves an existing data directory's owner.
func runUserByID(uid int) (runUser, error) {
	found, err := user.LookupId(strconv.Itoa(uid))
	if err != nil {
		return runUser{}, errs.Wrap(errs.KindEnvironment, err, "chown the data directory to an existing user, or pass --run-as",
			"the data directory is owned by uid %d, which has no user entry", uid)
	}
	u, err := fromUser(found)
	if err != nil {
		return runUser{}, err
	}
	u.Switch = os.Geteuid() == 0 && uid != 0
	return u, nil
}

func fromUser(u *user.User) (runUser, error) {
	uid, err1 := strconv.Atoi(u.Uid)
	gid, err2 := strconv.Atoi(u.Gid)
	if err1 != nil || err2 != nil {
		return runUser{}, errs.New(errs.KindEnvironment, "", "user %s has non-numeric ids %s:%s", u.Username, u.Uid, u.Gid)
	}
	r := runUser{Name: u.Username, UID: uid, GID: gid}
	if ids, err := u.GroupIds(); err == nil {
		for _, s := range ids {
			if g, err := strconv.Atoi(s); err == nil {
				r.Groups = append(r.Groups, g)
			}
		}
	}
	return r, nil
}

// sysProcAttr returns the process attributes that run a child as the user.
func (u runUser) sysProcAttr() *syscall.SysProcAttr {
	if !u.Switch {
		return nil
	}
	return credentials(u)
}

// chown gives path to the user when we switch users; otherwise it is already ours.
func (u runUser) chown(path string) error {
	if !u.Switch {
		return nil
	}
	return os.Lchown(path, u.UID, u.GID)
}

// inGroup reports whether the user belongs to gid.
func (u runUser) inGroup(gid int) bool {
	if gid == u.GID {
		return true
	}
	for _, g := range u.Groups {
		if g == gid {
			return true
		}
	}
	return false
}

// can reports whether the user has the permission bits in want (a mask of
// 4=read, 2=write, 1=execute) on a file with the given stat.
func (u runUser) can(st os.FileInfo, want os.FileMode) bool {
	uid, gid, ok := fileIDs(st)
	if !ok {
		return true
	}
	if u.UID == 0 {
		return true
	}
	perm := st.Mode().Perm()
	switch {
	case uid == u.UID:
		return (perm>>6)&want == want
	case u.inGroup(gid):
		return (perm>>3)&want == want
	default:
		return perm&want == want
	}
}

// checkTraversable verifies the user can reach path: every existing directory
// from / down to path (or its deepest existing ancestor) must grant search (x).
// what names the path in the error ("server dir", "bin dir").
func (u runUser) checkTraversable(path, what, fix string) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return errs.Wrap(errs.KindUsage, err, "", "bad path %q", path)
	}
	// Find the deepest existing ancestor and resolve symlinks in it.
	existing := abs
	for {
		if _, err := os.Stat(existing); err == nil {
			break
		}
		parent := filepath.Dir(existing)
		if parent == existing {
			break
		}
		existing = parent
	}
	real, err := filepath.EvalSymlinks(existing)
	if err != nil {
		real = existing
	}
	parts := strings.Split(strings.TrimPrefix(real, "/"), "/")
	cur := "/"
	check := []string{cur}
	for _, p := range parts {
		if p == "" {
			continue
		}
		cur = filepath.Join(cur, p)
		check = append(check, cur)
	}
	for _, dir := range check {
		st, err := os.Stat(dir)
		if err != nil {
			return errs.Wrap(errs.KindEnvironment, err, fix, "cannot inspect %s", dir)
		}
		if !st.IsDir() {
			return errs.New(errs.KindUsage, fix, "%s is not a directory (on the way to %s %s)", dir, what, abs)
		}
		if !u.can(st, 0o1) {
			return errs.New(errs.KindEnvironment,
				fmt.Sprintf("run `chmod o+x %s` (or give %s access), or %s", dir, u.Name, fix),
				"PostgreSQL runs as OS user %s, which cannot enter %s (mode %v), so it cannot reach %s %s",
				u.Name, dir, st.Mode().Perm(), what, abs)
		}
	}
	return nil
}
