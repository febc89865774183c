package mariadb

import (
	"fmt"
	"strconv"
	"strings"
)

// Placeholders rewrites PostgreSQL's $1..$n into MariaDB's positional ?,
// returning for each ? the number it had. Text in quotes (', ", `) and
// comments is left alone.
func Placeholders(q string) (string, []int, error) {
	if !strings.Contains(q, "$") {
		return q, nil, nil
	}
	var b strings.Builder
	var order []int
	for i := 0; i < len(q); i++ {
		c := q[i]
		switch {
		case c == '\'' || c == '"' || c == '`':
			j := i + 1
			for j < len(q) {
				if q[j] == '\\' && c != '`' {
					j += 2
					continue
				}
				if q[j] == c {
					if j+1 < len(q) && q[j+1] == c {
						j += 2
						continue
					}
					break
				}
				j++
			}
			if j >= len(q) {
				return "", nil, fmt.Errorf("unterminated %c quote", c)
			}
			b.WriteString(q[i : j+1])
			i = j
		case c == '-' && i+1 < len(q) && q[i+1] == '-' && (i+2 == len(q) || q[i+2] == ' ' || q[i+2] == '\t' || q[i+2] == '\n' || q[i+2] == '\r'), c == '#':
			j := strings.IndexByte(q[i:], '\n')
			if j < 0 {
				j = len(q) - i
			}
			b.WriteString(q[i : i+j])
			i += j - 1
		case c == '/' && i+1 < len(q) && q[i+1] == '*':
			j := strings.Index(q[i+2:], "*/")
			if j < 0 {
				return "", nil, fmt.Errorf("unterminated comment")
			}
			b.WriteString(q[i : i+j+4])
			i += j + 3
		case c == '$' && i+1 < len(q) && q[i+1] >= '0' && q[i+1] <= '9' && (i == 0 || !identChar(q[i-1])):
			j := i + 1
			for j < len(q) && q[j] >= '0' && q[j] <= '9' {
				j++
			}
			n, err := strconv.Atoi(q[i+1 : j])
			if err != nil || n < 1 {
				return "", nil, fmt.Errorf("bad parameter %s", q[i:j])
			}
			order = append(order, n)
			b.WriteByte('?')
			i = j - 1
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), order, nil
}

// identChar reports a character of an unquoted identifier ($ included:
// t$1 is a name, not a parameter).
func identChar(c byte) bool {
	return c == '_' || c == '$' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}

// txControl reports BEGIN, START TRANSACTION, COMMIT and ROLLBACK, which
// go as text (the status of every reply says whether a transaction is
// open).
func txControl(q string) bool {
	q = strings.TrimLeft(q, " \t\r\n")
	end := strings.IndexAny(q, " \t\r\n;")
	if end < 0 {
		end = len(q)
	}
	switch strings.ToUpper(q[:end]) {
	case "BEGIN", "START", "COMMIT", "ROLLBACK":
		return true
	}
	return false
}
