package driver

import (
	"github.com/tunebench/tunebench/internal/machine"

	"errors"
	"fmt"
	"sort"
	"strings"
	"syscall"

	"github.com/tunebench/tunebench/internal/envinfo"
	"github.com/tunebench/tunebench/internal/human"
)

// SQLSTATEs of class 53, insufficient resources.
const (
	InsufficientResources = "53000"
	DiskFull              = "53100"
	OutOfMemory           = "53200"
	TooManyConnections    = "53300"
)

// IsDiskFull reports whether err says a filesystem is full: PostgreSQL's
// disk_full (SQLSTATE 53100), ENOSPC from the operating system, or its
// message in an error that lost the code on the way.
func IsDiskFull(err error) bool {
	if err == nil {
		return false
	}
	if SQLState(err) == DiskFull || errors.Is(err, syscall.ENOSPC) {
		return true
	}
	return strings.Contains(err.Error(), "No space left on device")
}

// Space is the free space of the filesystem that holds a directory (a
// server's data directory), as this process sees it.
type Space struct {
	Dir   string // the directory asked about; "" when it is not known
	Mount string // where its filesystem is mounted ("" when unknown)
	Free  int64  // bytes an unprivileged process (the server) can still write
	Known bool   // Free was read
	// Why says why the space is not known (when Dir is "").
	Why string
}

// SpaceAt reads the filesystem of dir: its mount point and the bytes left
// to unprivileged writers (the reserved blocks of ext4 do not count: the
// server does not run as root).
func SpaceAt(dir string) Space {
	sp := Space{Dir: dir}
	if dir == "" {
		return sp
	}
	if fs, err := envinfo.FSInfo(dir); err == nil {
		sp.Mount = fs.MountPoint
	}
	sp.Free, sp.Known = machine.FreeBytes(dir)
	return sp
}

// SpaceNear is the space of a target's data when the target has a
// directory on the same filesystem (a managed server's scratch directory),
// unknown otherwise.
func SpaceNear(t interface {
	ScratchDir(name string) (string, bool)
}) Space {
	if t == nil {
		return Space{Why: "the target has no data directory"}
	}
	dir, ok := t.ScratchDir("")
	if !ok {
		return Space{Why: "the server's data directory is not visible here"}
	}
	return SpaceAt(dir)
}

// Where names the filesystem: "/mnt/pg" or "the filesystem of /x/data"; ""
// when the directory is unknown.
func (s Space) Where() string {
	switch {
	case s.Mount != "":
		return s.Mount
	case s.Dir != "":
		return "the filesystem of " + s.Dir
	}
	return ""
}

// String says how much room is left where: "the filesystem on /mnt/pg
// (holding /mnt/pg/srv/data) has 7.0 KiB free", or that it is not known.
func (s Space) String() string {
	if !s.Known {
		if s.Dir != "" {
			return fmt.Sprintf("the free space of the filesystem holding %s is not known here", s.Dir)
		}
		why := s.Why
		if why == "" {
			why = "the server's data directory is not visible here"
		}
		return "the free space of the server's filesystem is not known (" + why + ")"
	}
	where := "the filesystem of " + s.Dir
	if s.Mount != "" {
		where = "the filesystem on " + s.Mount + " (holding " + s.Dir + ")"
	}
	return where + " has " + human.Bytes(s.Free) + " free"
}

// Dominant is the SQLSTATE most errors had ("" when there are none); of
// equal counts the lowest code.
func Dominant(bySQLState map[string]int64) string {
	codes := make([]string, 0, len(bySQLState))
	for c := range bySQLState {
		codes = append(codes, c)
	}
	sort.Strings(codes)
	best := ""
	for _, c := range codes {
		if best == "" || bySQLState[c] > bySQLState[best] {
			best = c
		}
	}
	return best
}

// ErrorsHint is the fix line of a run whose errors exceeded its threshold,
// by the SQLSTATE most of them had: accepting more errors is the fix only
// when the errors are the workload's own; a full disk or a server out of
// resources (class 53) is fixed on the server. space, when not nil, is
// called for a full disk only, to name the filesystem and its free space.
func ErrorsHint(bySQLState map[string]int64, space func() Space) string {
	code := Dominant(bySQLState)
	switch {
	case code == DiskFull:
		if space == nil {
			return "most errors are disk full (SQLSTATE 53100): free space on the filesystem of the server's data directory (pg_wal and the tables grow during a run), then run again"
		}
		return "most errors are disk full (SQLSTATE 53100): " + space().String() + "; free space there (pg_wal and the tables grow during a run), then run again"
	case code == OutOfMemory:
		return "most errors are out of memory (SQLSTATE 53200): lower work_mem or the number of clients, or give the server more memory"
	case code == TooManyConnections:
		return "most errors are too many connections (SQLSTATE 53300): run fewer clients, or raise max_connections (--set max_connections=N)"
	case strings.HasPrefix(code, "53"):
		return "most errors are insufficient resources (SQLSTATE " + code + "): see the server's log for what it lacks"
	}
	return "see the errors by SQLSTATE above; raise --max-errors-pct to accept them"
}
