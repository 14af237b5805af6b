from datetime import datetime


def parse_date(s: str) -> datetime:
    return datetime.strptime(s, '%Y-%m-%d')
