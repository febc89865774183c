package machine

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// A process's files under /proc/PID: stat, status (memory) and io.

// UserHZ is the unit of the CPU times in /proc/PID/stat and /proc/stat.
// It is part of the Linux user-space ABI (sysconf(_SC_CLK_TCK)) and 100 on
// every architecture Go supports.
const UserHZ = 100

// ProcStat is what tunebench uses of /proc/PID/stat.
type ProcStat struct {
	PID, PPID      int
	Comm           string
	State          byte
	UTime, STime   uint64 // ticks (UserHZ)
	CUTime, CSTime uint64 // ticks of waited-for children
	StartTime      uint64 // ticks after boot
	RSSPages       int64
}

// ParseProcStat reads /proc/PID/stat. The command name is in parentheses
// and may itself hold spaces and parentheses, so the fields are counted
// from the last ')'.
func ParseProcStat(b []byte) (ProcStat, error) {
	var p ProcStat
	s := string(bytes.TrimSpace(b))
	open := strings.IndexByte(s, '(')
	closing := strings.LastIndexByte(s, ')')
	if open < 0 || closing < open {
		return p, fmt.Errorf("/proc/PID/stat: no command name in %.60q", s)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(s[:open]))
	if err != nil {
		return p, fmt.Errorf("/proc/PID/stat: pid: %w", err)
	}
	p.PID, p.Comm = pid, s[open+1:closing]
	// f[0] is field 3 (state) of proc(5).
	f := strings.Fields(s[closing+1:])
	if len(f) < 22 {
		return p, fmt.Errorf("/proc/%d/stat: %d fields after the name, want at least 22", pid, len(f))
	}
	p.State = f[0][0]
	field := func(n int) uint64 { // n is the proc(5) field number
		v, e := strconv.ParseUint(f[n-3], 10, 64)
		if e != nil && err == nil {
			err = fmt.Errorf("/proc/%d/stat: field %d: %w", pid, n, e)
		}
		return v
	}
	ppid, e := strconv.Atoi(f[1])
	if e != nil {
		return p, fmt.Errorf("/proc/%d/stat: ppid: %w", pid, e)
	}
	p.PPID = ppid
	p.UTime, p.STime = field(14), field(15)
	// cutime and cstime are signed in proc(5) but never negative.
	p.CUTime, p.CSTime = field(16), field(17)
	p.StartTime = field(22)
	rss, e := strconv.ParseInt(f[24-3], 10, 64)
	if e != nil && err == nil {
		err = fmt.Errorf("/proc/%d/stat: rss: %w", pid, e)
	}
	p.RSSPages = rss
	return p, err
}

// ProcStatus is what tunebench uses of /proc/PID/status, in bytes.
type ProcStatus struct {
	VmRSS, RssAnon, RssFile, RssShmem uint64
	// HasRssSplit is set when the kernel (4.5+) gives RssAnon/File/Shmem.
	HasRssSplit bool
}

// ParseProcStatus reads the memory lines of /proc/PID/status.
func ParseProcStatus(b []byte) (ProcStatus, error) {
	var s ProcStatus
	n := 0
	for line := range bytes.Lines(b) {
		name, rest, ok := strings.Cut(string(line), ":")
		if !ok {
			continue
		}
		var dst *uint64
		switch name {
		case "VmRSS":
			dst = &s.VmRSS
		case "RssAnon":
			dst = &s.RssAnon
			n++
		case "RssFile":
			dst = &s.RssFile
			n++
		case "RssShmem":
			dst = &s.RssShmem
			n++
		default:
			continue
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			return s, fmt.Errorf("/proc/PID/status: empty %s", name)
		}
		v, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil {
			return s, fmt.Errorf("/proc/PID/status: %s: %w", name, err)
		}
		if len(f) > 1 && f[1] == "kB" {
			v *= 1024
		}
		*dst = v
	}
	s.HasRssSplit = n == 3
	return s, nil
}

// ProcIO is what tunebench uses of /proc/PID/io: bytes the process caused
// to be read from and written to the storage layer (not page-cache hits).
type ProcIO struct {
	ReadBytes, WriteBytes, CancelledWriteBytes uint64
}

// ParseProcIO reads /proc/PID/io.
func ParseProcIO(b []byte) (ProcIO, error) {
	var p ProcIO
	n := 0
	for line := range bytes.Lines(b) {
		name, rest, ok := strings.Cut(string(line), ":")
		if !ok {
			continue
		}
		var dst *uint64
		switch name {
		case "read_bytes":
			dst = &p.ReadBytes
		case "write_bytes":
			dst = &p.WriteBytes
		case "cancelled_write_bytes":
			dst = &p.CancelledWriteBytes
		default:
			continue
		}
		v, err := strconv.ParseUint(strings.TrimSpace(rest), 10, 64)
		if err != nil {
			return p, fmt.Errorf("/proc/PID/io: %s: %w", name, err)
		}
		*dst = v
		n++
	}
	if n < 2 {
		return p, errors.New("/proc/PID/io: no read_bytes/write_bytes")
	}
	return p, nil
}

// ParentPIDOf extracts the parent pid from /proc/PID/stat text without
// parsing the rest (a scan of every process reads them all); -1 when
// malformed.
func ParentPIDOf(b []byte) int {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return -1
	}
	// ") S 1234 ...": skip the state, then read the number.
	b = b[i+1:]
	field, n, in := 0, 0, false
	for _, c := range b {
		if c == ' ' {
			if in && field == 2 {
				return n
			}
			in = false
			continue
		}
		if !in {
			in = true
			field++
		}
		if field == 2 {
			if c < '0' || c > '9' {
				return -1
			}
			n = n*10 + int(c-'0')
		}
	}
	if in && field == 2 {
		return n
	}
	return -1
}

// ReadProcStat reads this machine's /proc/PID/stat.
func ReadProcStat(pid int) (ProcStat, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ProcStat{}, err
	}
	return ParseProcStat(b)
}
