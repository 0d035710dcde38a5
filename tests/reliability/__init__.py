"""Reliability and security suite: crashes, races, redelivery, hostile input."""
