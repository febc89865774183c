package human

import (
	"math"
	"testing"
)

func TestBytes(t *testing.T) {
	for n, want := range map[int64]string{
		0:             "0 B",
		512:           "512 B",
		1023:          "1023 B",
		1024:          "1.0 KiB",
		7 << 10:       "7.0 KiB",
		1<<20 - 1:     "1024.0 KiB",
		1 << 20:       "1.0 MiB",
		3 << 29:       "1.5 GiB",
		5 << 40:       "5.0 TiB",
		3 << 50:       "3.0 PiB",
		2 << 60:       "2.0 EiB",
		math.MaxInt64: "8.0 EiB",
		-5:            "-5 B",
	} {
		if got := Bytes(n); got != want {
			t.Errorf("Bytes(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestLastLines(t *testing.T) {
	if got := LastLines("a\n\n b \nc\n\n", 2); got != "b | c" {
		t.Errorf("%q", got)
	}
	if got := LastLines("", 3); got != "" {
		t.Errorf("%q", got)
	}
}
