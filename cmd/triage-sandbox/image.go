package main

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/triage-sandbox/triage-sandbox/backends/docker"
	"github.com/triage-sandbox/triage-sandbox/images"
	"github.com/triage-sandbox/triage-sandbox/profiles"
)

func newImageCmd() *cobra.Command {
	img := &cobra.Command{Use: "image", Short: "Manage the docker sandbox image"}
	var o docker.BuildOptions
	build := &cobra.Command{
		Use:   "build [--base IMAGE] [--tag TAG] [--chromium]",
		Short: "Build the default sandbox image from the embedded images/Dockerfile",
		RunE: func(cmd *cobra.Command, args []string) error {
			d, err := dockerBackend(cmd)
			if err != nil {
				return refuse(err)
			}
			if err := d.BuildImage(cmd.Context(), images.Dockerfile, o, os.Stderr); err != nil {
				return refuse(err)
			}
			return nil
		},
	}
	build.Flags().StringVar(&o.Tag, "tag", profiles.DefaultImage, "image tag")
	build.Flags().StringVar(&o.BaseImage, "base", "", "base image (default debian:bookworm-slim; offline: "+profiles.DefaultBaseImage+" from images/build-base.sh)")
	build.Flags().BoolVar(&o.Chromium, "chromium", true, "include Chromium for browser reproducers (--chromium=false: a slim image; the browser control is then inconclusive)")
	img.AddCommand(build)
	return img
}
