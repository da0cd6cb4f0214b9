"""Alerts as stored and shown: their rows and events, where each shows, and the notification
events they write."""
