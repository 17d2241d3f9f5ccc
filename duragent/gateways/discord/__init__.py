"""Discord front end (discord.py). Never imports another front end.

(Populated by the Discord gateway work; see specs/.)
"""
