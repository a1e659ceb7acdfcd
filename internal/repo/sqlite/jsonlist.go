package sqlite

import "encoding/json"

// encodeList stores a string list as a JSON array ("[]" for none).
func encodeList(l []string) string {
	if len(l) == 0 {
		return "[]"
	}
	b, _ := json.Marshal(l)
	return string(b)
}

func decodeList(s string) ([]string, error) {
	out := []string{}
	if s == "[]" {
		return out, nil
	}
	err := json.Unmarshal([]byte(s), &out)
	return out, err
}
