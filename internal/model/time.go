package model

import (
	"fmt"
	"time"
)

// Time is an instant with millisecond precision, as it is stored (Unix ms, UTC),
// rendered as RFC 3339 with exactly three fractional digits so that clients can
// compare timestamps as strings.
type Time int64

const timeLayout = "2006-01-02T15:04:05.000Z07:00"

// Now is the current time at storage precision.
func Now() Time { return Time(time.Now().UnixMilli()) }

// TimeOf converts a time.Time, dropping precision below a millisecond.
func TimeOf(t time.Time) Time { return Time(t.UnixMilli()) }

// Std returns the time as a time.Time in UTC.
func (t Time) Std() time.Time { return time.UnixMilli(int64(t)).UTC() }

func (t Time) String() string { return string(t.AppendText(nil)) }

// AppendText appends the time as MarshalJSON writes it, without the quotes.
// Pages render a time per message; the digits written directly cost a fifth of
// time.Time.AppendFormat.
func (t Time) AppendText(b []byte) []byte {
	tm := t.Std()
	y, mo, d := tm.Date()
	if y < 0 || y > 9999 {
		return tm.AppendFormat(b, timeLayout)
	}
	h, mi, s := tm.Clock()
	ms := tm.Nanosecond() / 1e6
	b = append(b, byte('0'+y/1000), byte('0'+y/100%10), byte('0'+y/10%10), byte('0'+y%10), '-',
		byte('0'+int(mo)/10), byte('0'+int(mo)%10), '-', byte('0'+d/10), byte('0'+d%10), 'T',
		byte('0'+h/10), byte('0'+h%10), ':', byte('0'+mi/10), byte('0'+mi%10), ':', byte('0'+s/10), byte('0'+s%10), '.',
		byte('0'+ms/100), byte('0'+ms/10%10), byte('0'+ms%10), 'Z')
	return b
}

func (t Time) MarshalJSON() ([]byte, error) {
	return []byte(`"` + t.String() + `"`), nil
}

func (t *Time) UnmarshalJSON(b []byte) error {
	if len(b) < 2 || b[0] != '"' {
		return valueError("must be an RFC 3339 time string such as 2026-01-02T15:04:05Z")
	}
	p, err := ParseTime(string(b[1 : len(b)-1]))
	if err != nil {
		return valueError(err.Error())
	}
	*t = p
	return nil
}

// ParseTime parses an RFC 3339 time (fractional seconds optional).
func ParseTime(s string) (Time, error) {
	p, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return 0, fmt.Errorf("must be an RFC 3339 time such as 2026-01-02T15:04:05Z")
	}
	return TimeOf(p), nil
}
