package server_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/tunebench/tunebench/internal/testutil"
)

// A descriptor the caller holds without close-on-exec (as `flock L
// tunebench server start` leaves one) is not inherited by the server.
func TestServerDoesNotInheritDescriptors(t *testing.T) {
	path := filepath.Join(t.TempDir(), "held")
	fd, err := syscall.Open(path, syscall.O_CREAT|syscall.O_RDWR, 0o600) // no O_CLOEXEC
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	srv := testutil.StartServer(t)
	st, err := srv.Status(t.Context())
	if err != nil || st.PID == 0 {
		t.Fatalf("status: %+v %v", st, err)
	}
	dir := "/proc/" + strconv.Itoa(st.PID) + "/fd"
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if target, err := os.Readlink(filepath.Join(dir, e.Name())); err == nil && strings.HasSuffix(target, "/held") {
			t.Fatalf("the server (pid %d) holds the caller's descriptor as fd %s -> %s", st.PID, e.Name(), target)
		}
	}
}
