"""Telegram front end (python-telegram-bot). Never imports another front end.

(Populated by the Telegram gateway work; see specs/.)
"""
