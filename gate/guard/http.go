package guard

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"
)

// maxAnswerBytes caps what is read from a model: an answer is ~100 bytes,
// a chat-completions envelope a few KiB.
const maxAnswerBytes = 1 << 20

// transport asks the model one question and returns its answer text.
type transport interface {
	ask(ctx context.Context, req chatRequest) ([]byte, error)
}

// httpTransport talks to an OpenAI-compatible chat-completions endpoint.
type httpTransport struct {
	endpoint string
	apiKey   string
	client   *http.Client
}

func newHTTPTransport(endpoint, apiKey string) *httpTransport {
	return &httpTransport{
		endpoint: endpoint,
		apiKey:   apiKey,
		client: &http.Client{
			Transport: &http.Transport{
				// No proxy from the environment: the model is usually a
				// local server, and HTTP_PROXY must not receive the
				// command, the task and the scripts (nor the API key).
				Proxy:                  nil,
				DialContext:            (&net.Dialer{Timeout: 10 * time.Second}).DialContext,
				TLSHandshakeTimeout:    10 * time.Second,
				MaxResponseHeaderBytes: 64 << 10,
				// One question a minute at most: keep-alive buys nothing
				// and idle connections would outlive the Guard.
				DisableKeepAlives: true,
				ForceAttemptHTTP2: true,
			},
			// A redirect could carry the request elsewhere; a model server
			// has no reason to send one.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
	}
}

// ask posts the request and returns choices[0].message.content. A server
// that rejects response_format (HTTP 400 naming it; older llama.cpp and
// vLLM builds do) is asked once more without it: the system prompt demands
// the same JSON object and the parser stays just as strict, so dropping
// the hint cannot loosen the verdict.
func (t *httpTransport) ask(ctx context.Context, req chatRequest) ([]byte, error) {
	status, body, err := t.post(ctx, req)
	if err != nil {
		return nil, err
	}
	if status == http.StatusBadRequest && req.ResponseFormat != nil &&
		strings.Contains(strings.ToLower(string(body)), "response_format") {
		req.ResponseFormat = nil
		if status, body, err = t.post(ctx, req); err != nil {
			return nil, err
		}
	}
	if status != http.StatusOK {
		msg := fmt.Sprintf("model server answered HTTP %d", status)
		if snippet := oneLine(string(body), 200); snippet != "" {
			msg += ": " + snippet
		}
		return nil, errors.New(msg)
	}
	var resp struct {
		Choices []struct {
			Message struct {
				Content *string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(body, &resp); err != nil {
		return nil, fmt.Errorf("model server sent no chat-completions JSON: %v", err)
	}
	if len(resp.Choices) == 0 || resp.Choices[0].Message.Content == nil {
		return nil, errors.New("model server sent no choices[0].message.content")
	}
	return []byte(*resp.Choices[0].Message.Content), nil
}

func (t *httpTransport) post(ctx context.Context, req chatRequest) (int, []byte, error) {
	payload, err := json.Marshal(req)
	if err != nil {
		return 0, nil, fmt.Errorf("encoding the request: %w", err)
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, t.endpoint, bytes.NewReader(payload))
	if err != nil {
		return 0, nil, fmt.Errorf("building the request: %w", err)
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "application/json")
	if t.apiKey != "" {
		hreq.Header.Set("Authorization", "Bearer "+t.apiKey)
	}
	resp, err := t.client.Do(hreq)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes+1))
	if err != nil {
		return 0, nil, fmt.Errorf("reading the answer: %w", err)
	}
	if len(body) > maxAnswerBytes {
		return 0, nil, fmt.Errorf("answer too large (over %d bytes)", maxAnswerBytes)
	}
	return resp.StatusCode, body, nil
}
