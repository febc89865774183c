package machine

import (
	"errors"
	"testing"
)

func TestProcessCPUs(t *testing.T) {
	files := map[string]string{
		"/cg/a/b/cpu.max":                         "150000 100000\n",
		"/cg/a/cpu.max":                           "max 100000\n",
		"/cg/cpu,cpuacct/env/x/cpu.cfs_quota_us":  "-1\n",
		"/cg/cpu,cpuacct/env/x/cpu.cfs_period_us": "100000\n",
		"/cg/cpu,cpuacct/env/cpu.cfs_quota_us":    "100000\n",
		"/cg/cpu,cpuacct/env/cpu.cfs_period_us":   "100000\n",
	}
	read := func(p string) ([]byte, error) {
		if v, ok := files[p]; ok {
			return []byte(v), nil
		}
		return nil, errors.New("no file")
	}
	for _, c := range []struct {
		name, status, groups string
		want                 int
		ok                   bool
	}{
		{"affinity only", "Name:\tpostgres\nCpus_allowed_list:\t0-3,6\n", "0::/\n", 5, true},
		{"v2 quota on the group", "Cpus_allowed_list:\t0-7\n", "0::/a/b\n", 2, true},
		{"v2 no quota", "Cpus_allowed_list:\t0-7\n", "0::/a\n", 8, true},
		{"v1 quota on a parent", "Cpus_allowed_list:\t0-7\n", "4:memory:/env/x\n3:cpu,cpuacct:/env/x\n", 1, true},
		{"cpuset smaller than the quota", "Cpus_allowed_list:\t2\n", "0::/a/b\n", 1, true},
		{"no affinity line", "Name:\tx\n", "0::/\n", 0, false},
	} {
		got, ok := processCPUs([]byte(c.status), []byte(c.groups), "/cg", read)
		if got != c.want || ok != c.ok {
			t.Errorf("%s: %d %v, want %d %v", c.name, got, ok, c.want, c.ok)
		}
	}
}
