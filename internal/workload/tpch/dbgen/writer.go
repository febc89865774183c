package dbgen

import (
	"encoding/binary"
	"strconv"
	"time"
)

// writer appends fields and rows, as text ('|' after each field) or as
// binary COPY tuples (a field count, then each field's length and value).
type writer struct {
	buf      []byte
	trailing bool
	binary   bool
	field    int // binary: where the open field's length goes
	rows     int64
}

func (g *Generator) writer(buf []byte) writer {
	return writer{buf: buf, trailing: g.format.Trailing, binary: g.format.Binary}
}

// BinaryHeader starts a binary COPY stream (no flags, no extension), and
// BinaryTrailer ends it (PostgreSQL's COPY documentation, "Binary Format").
var (
	BinaryHeader  = []byte("PGCOPY\n\xff\r\n\x00\x00\x00\x00\x00\x00\x00\x00\x00")
	BinaryTrailer = []byte{0xff, 0xff}
)

// row starts a row of n fields.
func (w *writer) row(n int) {
	if w.binary {
		w.buf = binary.BigEndian.AppendUint16(w.buf, uint16(n))
	}
}

// open starts a field whose value is appended piece by piece; close ends it.
func (w *writer) open() {
	if w.binary {
		w.field = len(w.buf)
		w.buf = append(w.buf, 0, 0, 0, 0)
	}
}

func (w *writer) close() {
	if w.binary {
		binary.BigEndian.PutUint32(w.buf[w.field:], uint32(len(w.buf)-w.field-4))
		return
	}
	w.buf = append(w.buf, '|')
}

// int is an integer column.
func (w *writer) int(v int64) {
	if w.binary {
		w.buf = binary.BigEndian.AppendUint32(append(w.buf, 0, 0, 0, 4), uint32(int32(v)))
		return
	}
	w.buf = append(strconv.AppendInt(w.buf, v, 10), '|')
}

// key is a bigint column (the order keys).
func (w *writer) key(v int64) {
	if w.binary {
		w.buf = binary.BigEndian.AppendUint64(append(w.buf, 0, 0, 0, 8), uint64(v))
		return
	}
	w.buf = append(strconv.AppendInt(w.buf, v, 10), '|')
}

// quantity is a whole number in a numeric column (L_QUANTITY): dbgen
// writes it without decimals.
func (w *writer) quantity(v int64) {
	if w.binary {
		w.money(v * 100)
		return
	}
	w.int(v)
}

func (w *writer) str(v string) {
	if w.binary {
		w.buf = append(binary.BigEndian.AppendUint32(w.buf, uint32(len(v))), v...)
		return
	}
	w.buf = append(append(w.buf, v...), '|')
}

func (w *writer) bytes(v []byte) {
	if w.binary {
		w.buf = append(binary.BigEndian.AppendUint32(w.buf, uint32(len(v))), v...)
		return
	}
	w.buf = append(append(w.buf, v...), '|')
}

// money writes cents as a decimal with two places: numeric(15,2).
func (w *writer) money(cents int64) {
	if w.binary {
		w.buf = appendNumeric(w.buf, cents)
		return
	}
	if cents < 0 {
		w.buf = append(w.buf, '-')
		cents = -cents
	}
	w.buf = strconv.AppendInt(w.buf, cents/100, 10)
	w.buf = append(w.buf, '.', byte('0'+cents%100/10), byte('0'+cents%10), '|')
}

// appendNumeric appends cents/100 as a binary numeric field with display
// scale 2: digit count, weight, sign and scale, then base-10000 digits,
// most significant first (PostgreSQL's numeric_send layout).
func appendNumeric(b []byte, cents int64) []byte {
	sign := uint16(0)
	if cents < 0 {
		sign, cents = 0x4000, -cents
	}
	var digits [6]uint16 // numeric(15,2): at most 4 integer groups and 1 fraction group
	n := 0
	for x := cents / 100; x > 0; x /= 10000 {
		digits[n] = uint16(x % 10000)
		n++
	}
	weight := n - 1
	for i, j := 0, n-1; i < j; i, j = i+1, j-1 {
		digits[i], digits[j] = digits[j], digits[i]
	}
	if frac := cents % 100; frac != 0 {
		digits[n] = uint16(frac * 100)
		n++
	}
	for n > 0 && digits[n-1] == 0 { // trailing zero groups
		n--
	}
	if n == 0 {
		weight = 0
	}
	b = binary.BigEndian.AppendUint32(b, uint32(8+2*n))
	b = binary.BigEndian.AppendUint16(b, uint16(n))
	b = binary.BigEndian.AppendUint16(b, uint16(int16(weight)))
	b = binary.BigEndian.AppendUint16(b, sign)
	b = binary.BigEndian.AppendUint16(b, 2)
	for _, d := range digits[:n] {
		b = binary.BigEndian.AppendUint16(b, d)
	}
	return b
}

// pgEpochDay is day 0 of the generator's dates (1992-01-01) counted from
// PostgreSQL's date epoch, 2000-01-01.
var pgEpochDay = int32(epoch.Sub(time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)).Hours() / 24)

func (w *writer) date(d int32) {
	if w.binary {
		w.buf = binary.BigEndian.AppendUint32(append(w.buf, 0, 0, 0, 4), uint32(d+pgEpochDay))
		return
	}
	w.buf = append(append(w.buf, dateText[d][:]...), '|')
}

// padded writes prefix and v zero-padded to 9 digits (Supplier#000000001).
func (w *writer) padded(prefix string, v int64) {
	w.open()
	w.buf = append(w.buf, prefix...)
	var digits [20]byte
	d := strconv.AppendInt(digits[:0], v, 10)
	for i := len(d); i < 9; i++ {
		w.buf = append(w.buf, '0')
	}
	w.buf = append(w.buf, d...)
	w.close()
}

// labelled writes prefix and v (Manufacturer#3).
func (w *writer) labelled(prefix string, v int64) {
	w.open()
	w.buf = strconv.AppendInt(append(w.buf, prefix...), v, 10)
	w.close()
}

func (w *writer) end() {
	w.rows++
	if w.binary {
		return
	}
	if !w.trailing {
		w.buf = w.buf[:len(w.buf)-1]
	}
	w.buf = append(w.buf, '\n')
}
