package mariadb

import (
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
)

// The rows of a reply: text-protocol values as they come, binary-protocol
// values written as text the way MariaDB writes them.

// textRow reads a text-protocol row: each value a length-encoded string,
// 0xfb for NULL.
func textRow(p []byte, cols []column, r *reply, first, keep bool) error {
	if keep {
		r.row = r.row[:0]
	}
	i := 0
	for c := range cols {
		v, next, null, err := lenstr(p, i)
		if err != nil {
			return err
		}
		i = next
		if first && c < 2 && !null {
			if n, err := strconv.ParseInt(string(v), 10, 32); err == nil {
				r.ints[c] = int32(n)
			}
		}
		if keep {
			r.row = keepValue(r.row, v, null)
		}
	}
	return nil
}

// keepValue appends a value to row, reusing the row's buffers.
func keepValue(row [][]byte, v []byte, null bool) [][]byte {
	k := len(row)
	if null {
		return append(row, nil)
	}
	var b []byte
	if k < cap(row) {
		b = row[:k+1][k]
	}
	b = append(b[:0], v...)
	if b == nil {
		b = []byte{}
	}
	return append(row, b)
}

// binaryRow reads a binary-protocol row: 0x00, a NULL bitmap offset by
// two bits, then each non-NULL value in its type's encoding.
func binaryRow(p []byte, cols []column, r *reply, first, keep bool) error {
	if keep {
		r.row = r.row[:0]
	}
	nb := (len(cols) + 7 + 2) / 8
	if len(p) < 1+nb {
		return errMalformed
	}
	bitmap := p[1 : 1+nb]
	i := 1 + nb
	var tmp [64]byte
	for c, col := range cols {
		if bitmap[(c+2)/8]&(1<<((c+2)%8)) != 0 {
			if keep {
				r.row = append(r.row, nil)
			}
			continue
		}
		var v []byte
		var iv int64
		isInt := false
		need := 0
		switch col.typ {
		case typeTiny:
			need = 1
		case typeShort, typeYear:
			need = 2
		case typeLong, typeInt24, typeFloat:
			need = 4
		case typeLongLong, typeDouble:
			need = 8
		}
		if need > 0 && i+need > len(p) {
			return errMalformed
		}
		switch col.typ {
		case typeTiny:
			isInt = true
			if col.unsigned {
				iv = int64(p[i])
			} else {
				iv = int64(int8(p[i]))
			}
		case typeShort, typeYear:
			isInt = true
			u := binary.LittleEndian.Uint16(p[i:])
			if col.unsigned || col.typ == typeYear {
				iv = int64(u)
			} else {
				iv = int64(int16(u))
			}
		case typeLong, typeInt24:
			isInt = true
			u := binary.LittleEndian.Uint32(p[i:])
			if col.unsigned {
				iv = int64(u)
			} else {
				iv = int64(int32(u))
			}
		case typeLongLong:
			u := binary.LittleEndian.Uint64(p[i:])
			if col.unsigned && u > math.MaxInt64 {
				v = strconv.AppendUint(tmp[:0], u, 10)
			} else {
				isInt, iv = true, int64(u)
			}
		case typeFloat:
			v = strconv.AppendFloat(tmp[:0], float64(math.Float32frombits(binary.LittleEndian.Uint32(p[i:]))), 'g', -1, 32)
		case typeDouble:
			v = strconv.AppendFloat(tmp[:0], math.Float64frombits(binary.LittleEndian.Uint64(p[i:])), 'g', -1, 64)
		case typeDate, typeNewDate, typeDateTime, typeTimestamp, typeDateTime2, typeTimestamp2:
			if i >= len(p) || i+1+int(p[i]) > len(p) {
				return errMalformed
			}
			v = appendDateTime(tmp[:0], p[i+1:i+1+int(p[i])], col)
			need = 1 + int(p[i])
		case typeTime, typeTime2:
			if i >= len(p) || i+1+int(p[i]) > len(p) {
				return errMalformed
			}
			v = appendTime(tmp[:0], p[i+1:i+1+int(p[i])], col)
			need = 1 + int(p[i])
		default: // strings, DECIMAL, BLOB, BIT, JSON, ENUM, SET, GEOMETRY
			s, next, _, err := lenstr(p, i)
			if err != nil {
				return err
			}
			v, need = s, next-i
		}
		i += need
		if isInt {
			if first && c < 2 && iv >= math.MinInt32 && iv <= math.MaxInt32 {
				r.ints[c] = int32(iv)
			}
			if keep {
				v = strconv.AppendInt(tmp[:0], iv, 10)
			}
		}
		if keep {
			r.row = keepValue(r.row, v, false)
		}
	}
	return nil
}

// appendDateTime writes a binary DATE/DATETIME/TIMESTAMP (0, 4, 7 or 11
// bytes) as MariaDB writes it in text.
func appendDateTime(b, d []byte, col column) []byte {
	var y, mo, da, h, mi, s, us int
	if len(d) >= 4 {
		y, mo, da = int(binary.LittleEndian.Uint16(d)), int(d[2]), int(d[3])
	}
	if len(d) >= 7 {
		h, mi, s = int(d[4]), int(d[5]), int(d[6])
	}
	if len(d) >= 11 {
		us = int(binary.LittleEndian.Uint32(d[7:]))
	}
	b = fmt.Appendf(b, "%04d-%02d-%02d", y, mo, da)
	if col.typ == typeDate || col.typ == typeNewDate {
		return b
	}
	b = fmt.Appendf(b, " %02d:%02d:%02d", h, mi, s)
	return appendFraction(b, us, col.decimals)
}

// appendTime writes a binary TIME (0, 8 or 12 bytes) as text.
func appendTime(b, d []byte, col column) []byte {
	var neg bool
	var days, h, mi, s, us int
	if len(d) >= 8 {
		neg, days, h, mi, s = d[0] == 1, int(binary.LittleEndian.Uint32(d[1:])), int(d[5]), int(d[6]), int(d[7])
	}
	if len(d) >= 12 {
		us = int(binary.LittleEndian.Uint32(d[8:]))
	}
	if neg {
		b = append(b, '-')
	}
	b = fmt.Appendf(b, "%02d:%02d:%02d", days*24+h, mi, s)
	return appendFraction(b, us, col.decimals)
}

func appendFraction(b []byte, us int, decimals byte) []byte {
	if decimals == 0 || decimals > 6 {
		return b
	}
	f := fmt.Appendf(nil, "%06d", us)
	return append(append(b, '.'), f[:decimals]...)
}
