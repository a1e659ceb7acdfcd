package client

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"path/filepath"

	"github.com/logbook/logbook/client/api"
)

// Files: bytes uploaded once and named by image and file parts (file_id).
// The same bytes with the same media type are the same file, so an upload
// is retried after a lost answer when its body can be read again.

// UploadFile stores data as a file of mediaType (image/png,
// application/pdf, …) and answers it; name it in a part with [ImageFile]
// or [FilePart]. data is read once: a failed connection is retried only
// when it is a *bytes.Reader, *bytes.Buffer or *strings.Reader.
func (c *Client) UploadFile(ctx context.Context, data io.Reader, mediaType string) (*api.File, error) {
	return decode[api.File](c.raw.UploadFileWithBody(ctx, nil, mediaType, data))
}

// UploadPath uploads the file at path, its media type taken from its
// extension, or, for an extension the system does not know, from its first
// bytes (http.DetectContentType).
func (c *Client) UploadPath(ctx context.Context, path string) (*api.File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("logbook: upload: %w", err)
	}
	mediaType := mime.TypeByExtension(filepath.Ext(path))
	if mediaType == "" {
		mediaType = http.DetectContentType(data)
	}
	return c.UploadFile(ctx, bytes.NewReader(data), mediaType)
}

// DownloadFile reads a file's bytes and its media type. Close the reader
// when done.
func (c *Client) DownloadFile(ctx context.Context, fileID string) (io.ReadCloser, string, error) {
	resp, err := c.raw.DownloadFile(ctx, fileID, nil)
	rc, err := body(resp, err)
	if err != nil {
		return nil, "", err
	}
	return rc, resp.Header.Get("Content-Type"), nil
}

// body answers a 2xx answer's body, unread, for the caller to stream (an
// export, a file); anything else is read into a *Problem.
func body(resp *http.Response, err error) (io.ReadCloser, error) {
	if err != nil {
		return nil, err
	}
	if resp.StatusCode >= 200 && resp.StatusCode <= 299 {
		return resp.Body, nil
	}
	return nil, noContent(resp, nil)
}
