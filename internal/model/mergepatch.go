package model

// MergePatch applies an RFC 7396 JSON merge patch to target and returns the result.
// Values are what encoding/json produces for `any`. Objects merge key by key, a null
// removes a key, and anything else (arrays included) replaces the target wholesale.
// target is not modified.
func MergePatch(target, patch any) any {
	p, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	t, ok := target.(map[string]any)
	out := make(map[string]any, len(t)+len(p))
	if ok {
		for k, v := range t {
			out[k] = v
		}
	}
	for k, v := range p {
		if v == nil {
			delete(out, k)
			continue
		}
		out[k] = MergePatch(out[k], v)
	}
	return out
}
