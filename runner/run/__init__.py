"""One commit's pipeline (checkout, build, check, profile, time, timeline) and its document; a
confirmation's too."""
