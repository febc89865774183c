package machine

import (
	"bufio"
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ProcessCPUs is how many CPUs process pid can use at once: the CPUs its
// affinity allows (a cpuset), less if its cgroup's CPU quota is smaller
// (cgroup v2 cpu.max, v1 cpu.cfs_quota_us, on its group or an ancestor),
// rounded up. ok is false when /proc does not tell (another system, or
// the process is gone).
func ProcessCPUs(pid int) (n int, ok bool) {
	proc := filepath.Join("/proc", strconv.Itoa(pid))
	status, err := os.ReadFile(filepath.Join(proc, "status"))
	if err != nil {
		return 0, false
	}
	groups, _ := os.ReadFile(filepath.Join(proc, "cgroup"))
	return processCPUs(status, groups, "/sys/fs/cgroup", os.ReadFile)
}

func processCPUs(status, groups []byte, root string, read func(string) ([]byte, error)) (int, bool) {
	n := 0
	sc := bufio.NewScanner(bytes.NewReader(status))
	for sc.Scan() {
		if v, found := strings.CutPrefix(sc.Text(), "Cpus_allowed_list:"); found {
			n = countCPUList(strings.TrimSpace(v))
		}
	}
	if n == 0 {
		return 0, false
	}
	if q := cgroupQuota(groups, root, read); q > 0 {
		n = min(n, int(math.Ceil(q)))
	}
	return max(n, 1), true
}

// countCPUList counts the CPUs of a list such as "0-3,8,10-11".
func countCPUList(s string) int {
	n := 0
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			continue
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil {
				continue
			}
		}
		n += b - a + 1
	}
	return n
}

// cgroupQuota is the smallest CPU quota (in CPUs) on the process's cgroup
// path and its ancestors; 0 when there is none.
func cgroupQuota(groups []byte, root string, read func(string) ([]byte, error)) float64 {
	best := 0.0
	take := func(q float64) {
		if q > 0 && (best == 0 || q < best) {
			best = q
		}
	}
	for _, line := range strings.Split(string(groups), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		ctrls, path := f[1], f[2]
		switch {
		case f[0] == "0" && ctrls == "":
			for p := path; ; p = filepath.Dir(p) {
				if b, err := read(filepath.Join(root, p, "cpu.max")); err == nil {
					if quota, period, ok := strings.Cut(strings.TrimSpace(string(b)), " "); ok && quota != "max" {
						q, _ := strconv.ParseFloat(quota, 64)
						per, _ := strconv.ParseFloat(period, 64)
						if per > 0 {
							take(q / per)
						}
					}
				}
				if p == "/" || p == "." {
					break
				}
			}
		case hasController(ctrls, "cpu"):
			for _, mnt := range []string{"cpu", "cpu,cpuacct", "cpuacct,cpu"} {
				for p := path; ; p = filepath.Dir(p) {
					qb, err1 := read(filepath.Join(root, mnt, p, "cpu.cfs_quota_us"))
					pb, err2 := read(filepath.Join(root, mnt, p, "cpu.cfs_period_us"))
					if err1 == nil && err2 == nil {
						q, _ := strconv.ParseFloat(strings.TrimSpace(string(qb)), 64)
						per, _ := strconv.ParseFloat(strings.TrimSpace(string(pb)), 64)
						if q > 0 && per > 0 {
							take(q / per)
						}
					}
					if p == "/" || p == "." {
						break
					}
				}
			}
		}
	}
	return best
}

func hasController(list, c string) bool {
	for _, x := range strings.Split(list, ",") {
		if x == c {
			return true
		}
	}
	return false
}
