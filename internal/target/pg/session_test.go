package pg

import (
	"testing"

	"github.com/tunebench/tunebench/internal/target"
)

// TestSlotEncoding: integers go in binary, in place (a statement keeps its
// Bind), amounts and names as text, int4[] in PostgreSQL's binary array
// format.
func TestSlotEncoding(t *testing.T) {
	spec := &target.SessionSpec{Slots: []target.ParamType{target.Int4, target.Int8, target.Numeric, target.Text, target.Int4Array}}
	s := &session{spec: spec, slots: make([][]byte, 5), bufs: [][]byte{make([]byte, 4), make([]byte, 8), nil, nil, nil}}
	s.SetInt(0, -2)
	before := &s.bufs[0][0]
	s.SetInt(0, 7)
	if string(s.slots[0]) != "\x00\x00\x00\x07" || &s.slots[0][0] != before {
		t.Errorf("int4 % x (moved: %v)", s.slots[0], &s.slots[0][0] != before)
	}
	s.SetInt(1, 1<<40)
	if string(s.slots[1]) != "\x00\x00\x01\x00\x00\x00\x00\x00" {
		t.Errorf("int8 % x", s.slots[1])
	}
	s.SetText(2, []byte("1234.05"))
	s.SetInt(3, 42)
	if string(s.slots[2]) != "1234.05" || string(s.slots[3]) != "42" {
		t.Errorf("text slots %q %q", s.slots[2], s.slots[3])
	}
	s.SetNull(3)
	if s.slots[3] != nil {
		t.Error("NULL")
	}
	s.SetIntArray(4, []int32{7, 100001})
	want := []byte{0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 23, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 4, 0, 0, 0, 7, 0, 0, 0, 4, 0, 1, 0x86, 0xa1}
	if string(s.slots[4]) != string(want) {
		t.Errorf("int4[] % x, want % x", s.slots[4], want)
	}
}
