package dbgen

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// The column kinds of each table, as the binary rows encode them: i
// integer, k bigint, n numeric(15,2), q a whole numeric, d date, s text.
var columnKinds = map[Table]string{
	Part: "issssisns", Supplier: "issisns", PartSupp: "iiins", Customer: "issisnss",
	Orders: "kisndssis", Lineitem: "kiiiqnnnssdddsss", Nation: "isis", Region: "iss",
}

// decodeBinary turns binary COPY rows back into the text format, field by
// field, so that they can be compared with the text generator.
func decodeBinary(t *testing.T, tb Table, b []byte) string {
	t.Helper()
	kinds := columnKinds[tb]
	var out strings.Builder
	for len(b) > 0 {
		n := int(binary.BigEndian.Uint16(b))
		b = b[2:]
		if n != len(kinds) {
			t.Fatalf("%s: a row of %d fields, want %d", tb, n, len(kinds))
		}
		for i := range n {
			l := int(int32(binary.BigEndian.Uint32(b)))
			v := b[4 : 4+l]
			b = b[4+l:]
			if i > 0 {
				out.WriteByte('|')
			}
			switch kinds[i] {
			case 'i':
				out.WriteString(strconv.Itoa(int(int32(binary.BigEndian.Uint32(v)))))
			case 'k':
				out.WriteString(strconv.FormatInt(int64(binary.BigEndian.Uint64(v)), 10))
			case 'd':
				day := int32(binary.BigEndian.Uint32(v)) - pgEpochDay
				out.Write(dateText[day][:])
			case 'n', 'q':
				s := decodeNumeric(t, v)
				if kinds[i] == 'q' {
					s = strings.TrimSuffix(s, ".00")
				}
				out.WriteString(s)
			default:
				out.Write(v)
			}
		}
		out.WriteByte('\n')
	}
	return out.String()
}

// decodeNumeric renders a binary numeric with scale 2, checking its header
// as PostgreSQL's numeric_recv would.
func decodeNumeric(t *testing.T, v []byte) string {
	t.Helper()
	n := int(binary.BigEndian.Uint16(v))
	weight := int(int16(binary.BigEndian.Uint16(v[2:])))
	sign := binary.BigEndian.Uint16(v[4:])
	scale := binary.BigEndian.Uint16(v[6:])
	if len(v) != 8+2*n || scale != 2 || (sign != 0 && sign != 0x4000) {
		t.Fatalf("numeric header: %d digits, %d bytes, scale %d, sign %#x", n, len(v), scale, sign)
	}
	var cents int64
	for i := range n {
		d := int64(binary.BigEndian.Uint16(v[8+2*i:]))
		if d >= 10000 || (i == n-1 && d == 0) {
			t.Fatalf("numeric digit %d (of %d) is %d", i, n, d)
		}
		// Digit i is worth 10000^(weight-i); cents are 10^-2.
		e := weight - i
		switch {
		case e >= 0:
			m := int64(100)
			for range e {
				m *= 10000
			}
			cents += d * m
		case e == -1:
			if d%100 != 0 {
				t.Fatalf("numeric fraction %d needs more than 2 places", d)
			}
			cents += d / 100
		default:
			t.Fatalf("numeric weight %d, digit %d", weight, i)
		}
	}
	s := fmt.Sprintf("%d.%02d", cents/100, cents%100)
	if sign != 0 {
		s = "-" + s
	}
	return s
}

// Every table's binary rows hold the values of the text rows, in chunks
// as the loader generates them.
func TestBinaryMatchesText(t *testing.T) {
	txt, bin := New(0.01, COPY), New(0.01, Binary)
	for _, tb := range Tables() {
		units := Units(tb, 0.01)
		step := max(units/7, 1)
		for first := int64(0); first < units; first += step {
			n := min(step, units-first)
			want, wn := txt.Append(nil, tb, first, n)
			got, gn := bin.Append(nil, tb, first, n)
			if gn != wn {
				t.Fatalf("%s [%d,+%d): %d binary rows, %d text rows", tb, first, n, gn, wn)
			}
			if g := decodeBinary(t, tb, got); g != string(want) {
				gl, wl := strings.Split(g, "\n"), strings.Split(string(want), "\n")
				for i := range min(len(gl), len(wl)) {
					if gl[i] != wl[i] {
						t.Fatalf("%s [%d,+%d) row %d:\n binary %s\n text   %s", tb, first, n, i, gl[i], wl[i])
					}
				}
				t.Fatalf("%s [%d,+%d): %d lines, want %d", tb, first, n, len(gl), len(wl))
			}
		}
	}
}

func TestNumericEdges(t *testing.T) {
	for _, c := range []int64{0, 1, -1, 99, 100, 101, 1000000, 99999999, -99999, 100000000, 123456789012345} {
		got := decodeNumeric(t, appendNumeric(nil, c)[4:])
		want := fmt.Sprintf("%d.%02d", c/100, max(c, -c)%100)
		if c < 0 && c > -100 {
			want = "-" + want
		}
		if got != want {
			t.Errorf("%d cents: %s, want %s", c, got, want)
		}
	}
	if !bytes.Equal(BinaryHeader[:11], []byte("PGCOPY\n\xff\r\n\x00")) || len(BinaryHeader) != 19 {
		t.Errorf("header %q", BinaryHeader)
	}
}
