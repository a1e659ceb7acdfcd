// Package standin is Logbook's own embedding server for tests and demos: an
// OpenAI-compatible POST /v1/embeddings that answers at once, the same vector
// for the same text, with no model to download. It stands in for a real
// provider (a local Ollama, OpenAI): its vectors only know the synonyms of
// its small thesaurus (car ≈ automobile ≈ vehicle …), enough for tests to
// show a search finding a text by meaning that shares no word with the
// query. Never use it for real memory.
package standin

import (
	"encoding/json"
	"hash/fnv"
	"math"
	"net/http"
	"strings"
	"sync"
	"time"
	"unicode"
)

// Model is the model name the stand-in reports.
const Model = "logbook-standin"

// Server is the handler. Its fields let a test make it misbehave.
type Server struct {
	Dims int // dimensions of every vector; 64 if 0

	mu       sync.Mutex
	failNext int           // answer this many requests with 503
	delay    time.Duration // wait this long before each answer
	calls    int
	texts    int
}

// FailNext makes the next n requests answer 503.
func (s *Server) FailNext(n int) { s.mu.Lock(); s.failNext = n; s.mu.Unlock() }

// SetDelay makes every answer wait d.
func (s *Server) SetDelay(d time.Duration) { s.mu.Lock(); s.delay = d; s.mu.Unlock() }

// Calls returns how many requests and texts it has embedded.
func (s *Server) Calls() (requests, texts int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls, s.texts
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, `{"error":{"message":"POST only"}}`, http.StatusMethodNotAllowed)
		return
	}
	var req struct {
		Model      string          `json:"model"`
		Input      json.RawMessage `json:"input"`
		Dimensions int             `json:"dimensions"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<20)).Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, "body: "+err.Error())
		return
	}
	var texts []string
	if err := json.Unmarshal(req.Input, &texts); err != nil {
		var one string
		if err := json.Unmarshal(req.Input, &one); err != nil {
			writeError(w, http.StatusBadRequest, "input must be a string or a list of strings")
			return
		}
		texts = []string{one}
	}
	s.mu.Lock()
	fail, delay := s.failNext > 0, s.delay
	if fail {
		s.failNext--
	} else {
		s.calls++
		s.texts += len(texts)
	}
	s.mu.Unlock()
	if delay > 0 {
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return
		}
	}
	if fail {
		writeError(w, http.StatusServiceUnavailable, "overloaded (as told)")
		return
	}
	dims := s.Dims
	if req.Dimensions > 0 {
		dims = req.Dimensions
	}
	if dims <= 0 {
		dims = 64
	}
	type item struct {
		Object    string    `json:"object"`
		Index     int       `json:"index"`
		Embedding []float32 `json:"embedding"`
	}
	data := make([]item, len(texts))
	for i, t := range texts {
		data[i] = item{Object: "embedding", Index: i, Embedding: Embed(t, dims)}
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"object": "list", "model": req.Model, "data": data,
		"usage": map[string]int{"prompt_tokens": 0, "total_tokens": 0}})
}

func writeError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"message": msg}})
}

// Embed is the stand-in's vector of text: each word that is not a stop word
// becomes its thesaurus concept (or stays itself), and each concept adds ±1
// at four places its hash picks; the sum is normalised.
func Embed(text string, dims int) []float32 {
	v := make([]float64, dims)
	words := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	for _, w := range words {
		if stop[w] {
			continue
		}
		c, ok := concept[w]
		if !ok {
			c = strings.TrimSuffix(w, "s")
		}
		h := fnv.New64a()
		h.Write([]byte(c))
		x := h.Sum64()
		for k := 0; k < 4; k++ {
			i := int(x % uint64(dims))
			x /= uint64(dims)
			sign := 1.0
			if x&1 == 1 {
				sign = -1
			}
			x >>= 1
			v[i] += sign
		}
	}
	var n float64
	for _, f := range v {
		n += f * f
	}
	out := make([]float32, dims)
	if n == 0 {
		out[0] = 1 // every text gets a direction, even one of stop words only
		return out
	}
	n = math.Sqrt(n)
	for i, f := range v {
		out[i] = float32(f / n)
	}
	return out
}

var stop = map[string]bool{}
var concept = map[string]string{}

func init() {
	for _, w := range strings.Fields(`a an the and or but of to in on at for with from by about as is are was were be been
		being am i me my we our you your he she it its they them their this that these those what which who whom how
		when where why do does did have has had will would can could should shall may might must not no yes so than
		too very just any some all into over under up down out off again there here`) {
		stop[w] = true
	}
	for _, group := range []string{
		"car cars automobile automobiles vehicle vehicles sedan truck motor",
		"doctor doctors physician physicians medic clinic hospital nurse",
		"dog dogs puppy puppies canine hound",
		"cat cats kitten kittens feline",
		"happy glad joyful cheerful delighted",
		"sad unhappy miserable gloomy",
		"money cash payment payments salary funds invoice bill bills paid pay",
		"movie movies film films cinema",
		"food meal meals dinner lunch breakfast eat eating cuisine restaurant",
		"coffee espresso latte cappuccino",
		"travel trip trips flight flights journey vacation holiday fly flying",
		"sick ill fever flu unwell illness",
		"home house apartment residence flat",
		"big large huge enormous",
		"fast quick rapid speedy",
		"buy bought purchase purchased acquire",
		"phone telephone smartphone mobile",
		"computer computers laptop pc notebook",
		"child children kid kids son daughter",
		"music song songs melody tune concert",
		"birthday anniversary celebration party",
		"allergy allergic allergies intolerance",
		"peanut peanuts nut nuts",
		"job work career employment occupation office",
		"language languages spanish french german",
		"sport sports football soccer tennis basketball",
		"weather rain sunny forecast snow",
	} {
		words := strings.Fields(group)
		for _, w := range words {
			concept[w] = words[0]
		}
	}
}
