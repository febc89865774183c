//go:build linux

package testutil

import (
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/tunebench/tunebench/internal/proc"
	"github.com/tunebench/tunebench/internal/server"
)

// NetNS is a network namespace a test made, joined to this one by a veth
// pair: HostAddr on this side, Addr inside. A server started in it (Wrap)
// is on "another machine" as far as the network goes, and the test
// reaches it over the pair only: tests never contact another address.
type NetNS struct {
	Name     string
	Addr     string // the namespace's side, e.g. 10.231.7.2
	HostAddr string // this side, e.g. 10.231.7.1
}

var netnsSeq atomic.Int32

// NewNetNS makes a namespace with a veth pair in a /30 of 10.231.0.0/16
// that no interface here uses yet, or skips (fails in CI) without root or
// ip. tb.Cleanup deletes the namespace, which removes the pair too, also
// when the test fails.
func NewNetNS(tb testing.TB) *NetNS {
	tb.Helper()
	if os.Geteuid() != 0 {
		skipOrFail(tb, "network namespaces need root")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		skipOrFail(tb, "ip (iproute2) is not installed")
	}
	sweepNetNS()
	n := int(netnsSeq.Add(1))
	k, unlock := claimSubnet(tb, (os.Getpid()*7+n*13)%250)
	ns := &NetNS{Name: fmt.Sprintf("tbtest-%d-%d", os.Getpid(), n), Addr: fmt.Sprintf("10.231.%d.2", k), HostAddr: fmt.Sprintf("10.231.%d.1", k)}
	host, inside := fmt.Sprintf("tbh%d", k), fmt.Sprintf("tbn%d", k)
	run := func(args ...string) {
		tb.Helper()
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			tb.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	if out, err := exec.Command("ip", "netns", "add", ns.Name).CombinedOutput(); err != nil {
		unlock()
		skipOrFail(tb, fmt.Sprintf("cannot make a network namespace: %v: %s", err, out))
	}
	tb.Cleanup(func() {
		exec.Command("ip", "netns", "del", ns.Name).Run()
		exec.Command("ip", "link", "del", host).Run() // gone with the namespace; in case the move failed
		unlock()                                      // only now may another test take subnet k
	})
	run("link", "add", host, "type", "veth", "peer", "name", inside)
	run("link", "set", inside, "netns", ns.Name)
	run("addr", "add", ns.HostAddr+"/30", "dev", host)
	run("link", "set", host, "up")
	run("-n", ns.Name, "addr", "add", ns.Addr+"/30", "dev", inside)
	run("-n", ns.Name, "link", "set", inside, "up")
	run("-n", ns.Name, "link", "set", "lo", "up")
	return ns
}

// claimSubnet takes a /30 of 10.231.0.0/16 (number k, from start on) that
// no interface here uses and no other test holds: a lock file, held until
// unlock, tells the test processes of one machine apart. unlock removes
// the file before it lets go of the lock, so no lock files are left
// behind; a lock taken on a file that its holder removed in the meantime
// (opened before the removal, locked after) is on a file no one else will
// open, so it does not count.
func claimSubnet(tb testing.TB, start int) (int, func()) {
	tb.Helper()
	used, _ := exec.Command("ip", "-o", "-4", "addr").Output()
	for i := range 250 {
		k := (start + i) % 250
		if strings.Contains(string(used), fmt.Sprintf("10.231.%d.", k)) {
			continue
		}
		path := filepath.Join(os.TempDir(), fmt.Sprintf("tunebench-netns-%d.lock", k))
		f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
		if err != nil {
			tb.Fatal(err)
		}
		if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil || !isFileAt(f, path) {
			f.Close()
			continue
		}
		return k, func() {
			os.Remove(path)
			f.Close()
		}
	}
	tb.Fatalf("no free /30 in 10.231.0.0/16 for a test network namespace")
	return 0, nil
}

// isFileAt reports whether path still names the file f has open.
func isFileAt(f *os.File, path string) bool {
	a, err := f.Stat()
	if err != nil {
		return false
	}
	b, err := os.Stat(path)
	return err == nil && os.SameFile(a, b)
}

// sweepNetNS deletes the namespaces a killed test process left
// (tbtest-PID-N of a pid that is gone).
func sweepNetNS() {
	out, _ := exec.Command("ip", "netns", "list").Output()
	for _, line := range strings.Split(string(out), "\n") {
		name, _, _ := strings.Cut(strings.TrimSpace(line), " ")
		var pid, n int
		if _, err := fmt.Sscanf(name, "tbtest-%d-%d", &pid, &n); err == nil && pid != os.Getpid() && !proc.Exists(pid) {
			exec.Command("ip", "netns", "del", name).Run()
		}
	}
}

// Wrap runs cmd inside the namespace (a server.Options.Wrap): ip netns
// exec as root, then setpriv to the user cmd was to run as.
func (ns *NetNS) Wrap(cmd *exec.Cmd) error {
	args := []string{"ip", "netns", "exec", ns.Name}
	if a := cmd.SysProcAttr; a != nil && a.Credential != nil {
		c := a.Credential
		args = append(args, "setpriv", "--reuid="+strconv.Itoa(int(c.Uid)), "--regid="+strconv.Itoa(int(c.Gid)), "--clear-groups", "--")
		attr := *a
		attr.Credential = nil
		cmd.SysProcAttr = &attr
	}
	path, err := exec.LookPath("ip")
	if err != nil {
		return err
	}
	cmd.Args = append(append(args, cmd.Path), cmd.Args[1:]...)
	cmd.Path = path
	return nil
}

// Exec is a command line that runs argv inside the namespace as the
// managed server's user (for a restart command).
func (ns *NetNS) Exec(srv *server.Server, argv ...string) string {
	q := make([]string, 0, len(argv)+8)
	q = append(q, "ip", "netns", "exec", ns.Name, "setpriv")
	if u, err := user.Lookup(srv.RunAs()); err == nil {
		q = append(q, "--reuid="+u.Uid, "--regid="+u.Gid, "--clear-groups")
	}
	q = append(q, "--")
	for _, a := range argv {
		q = append(q, "'"+strings.ReplaceAll(a, "'", `'\''`)+"'")
	}
	return strings.Join(q, " ")
}

// StartServerIn starts a managed server for one test inside the namespace,
// listening on its address (server.Options.Listen): tunebench reaches it
// from here as a remote server.
func StartServerIn(tb testing.TB, ns *NetNS, opts ...func(*server.Options)) *server.Server {
	tb.Helper()
	return StartServer(tb, append([]func(*server.Options){func(o *server.Options) {
		o.Listen, o.Wrap = ns.Addr, ns.Wrap
	}}, opts...)...)
}
