"""Recurring jobs: triggers (cron, interval, one time) in a time zone."""
