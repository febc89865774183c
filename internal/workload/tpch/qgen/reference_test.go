package qgen

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// testdata/subparam_N are the TPC's reference substitution parameters at
// SF 1 (tpch-kit ref_data/1, written by qgen -s 1 -r SEED -l subparam_N as
// dbgen/reference/cmd_qgen_sf1 lists): one line per query, its number and
// its parameters, tab-separated.
func TestParametersMatchQgenReference(t *testing.T) {
	seeds := map[string]int64{"subparam_1": 101000000, "subparam_2": 8204031, "subparam_3": 16408062,
		"subparam_100": 812199069, "subparam_150": 1231235959}
	for file, seed := range seeds {
		f, err := os.Open(filepath.Join("testdata", file))
		if err != nil {
			t.Fatal(err)
		}
		rng := NewRand(seed)
		sc := bufio.NewScanner(f)
		lines := 0
		for sc.Scan() {
			fields := strings.Split(strings.TrimRight(sc.Text(), "\t "), "\t")
			n, err := strconv.Atoi(fields[0])
			if err != nil {
				t.Fatalf("%s: %q", file, sc.Text())
			}
			lines++
			got := Random(n, 1, rng).Params
			if strings.Join(got, "|") != strings.Join(fields[1:], "|") {
				t.Errorf("%s (seed %d) Q%d: parameters %q, qgen wrote %q", file, seed, n, got, fields[1:])
			}
		}
		f.Close()
		if lines != 22 {
			t.Errorf("%s: %d lines", file, lines)
		}
	}
}
