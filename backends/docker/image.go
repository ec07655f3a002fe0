package docker

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/moby/moby/client"
)

// BuildOptions select the image variant.
type BuildOptions struct {
	Tag       string
	BaseImage string // "" keeps the Dockerfile's default (debian:bookworm-slim)
	Chromium  bool
}

// BuildImage builds dockerfile (the embedded images/Dockerfile) and streams
// the build log to log.
func (b *Backend) BuildImage(ctx context.Context, dockerfile []byte, o BuildOptions, log io.Writer) error {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{Name: "Dockerfile", Mode: 0o644, Size: int64(len(dockerfile)), ModTime: time.Unix(0, 0)}); err != nil {
		return err
	}
	if _, err := tw.Write(dockerfile); err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	args := map[string]*string{}
	if o.BaseImage != "" {
		args["BASE_IMAGE"] = &o.BaseImage
	}
	if o.Chromium {
		one := "1"
		args["WITH_CHROMIUM"] = &one
	}
	resp, err := b.cli.ImageBuild(ctx, &buf, client.ImageBuildOptions{
		Tags: []string{o.Tag}, BuildArgs: args, Remove: true, ForceRemove: true, Dockerfile: "Dockerfile",
	})
	if err != nil {
		return fmt.Errorf("docker build: %w", err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var msg struct {
			Stream string `json:"stream"`
			Error  string `json:"error"`
		}
		if json.Unmarshal(sc.Bytes(), &msg) != nil {
			continue
		}
		if msg.Error != "" {
			hint := ""
			if strings.Contains(msg.Error, "pull access denied") || strings.Contains(msg.Error, "not found") {
				hint = "; offline, build a base first: images/build-base.sh, then --base triage-sandbox-base:bookworm"
			}
			return fmt.Errorf("docker build: %s%s", strings.TrimSpace(msg.Error), hint)
		}
		fmt.Fprint(log, msg.Stream)
	}
	return sc.Err()
}
