/**
 * The content themes of bingo cards, with their names for people: one source for the hub (cards,
 * validation) and the pages (a card's title). No Node module here, so pages may import it.
 */
export type ThemeKind = 'emoji' | 'text';

export interface Theme {
  id: string;
  name: string;
  kind: ThemeKind;
  items: readonly string[];
}

const t = (id: string, name: string, kind: ThemeKind, items: string) =>
  ({ id, name, kind, items: kind === 'emoji' ? [...new Intl.Segmenter().segment(items)].map((s) => s.segment).filter((s) => s.trim()) : items.split(',').map((s) => s.trim()) }) satisfies Theme;

/** Content themes (each at least 25 distinct items, so every column pool holds at least 5). */
export const THEMES: readonly Theme[] = [
  t('animals', '동물 Animals', 'emoji', '🐶🐱🐭🐹🐰🦊🐻🐼🐨🐯🦁🐮🐷🐸🐵🐔🐧🐦🐤🦆🦅🦉🐺🐗🐴🦄🐝🦋🐌🐞🐢🐍🐙🦀🐬🐳🦈🦒🐘🦔'),
  t('food', '음식 Food', 'emoji', '🍎🍊🍋🍌🍉🍇🍓🍒🍑🍍🥝🍅🥑🍆🥕🌽🥦🍄🥜🍞🧀🥚🍳🥞🍗🍔🍟🍕🌮🍜🍣🍙🍚🍡🍦🍩🍪🎂🍰🍫'),
  t('music', '음악 Music', 'emoji', '🎤🎧🎼🎹🥁🎷🎺🎸🎻🎵🎶📯🔊📻💿📀🎬🎭🎟🎫✨🌟💡🔦🎆🎇🎉🎊💃🕺'),
  t('sports', '스포츠 Sports', 'emoji', '⚽🏀🏈⚾🎾🏐🏉🎱🏓🏸🏒🏑🏏⛳🏹🎣🥊🥋🎿🏂🏄🚴🏊🏆🥇🥈🥉🏅🎯🛹'),
  t(
    'korean-food',
    '한식 Korean food',
    'text',
    '김치,비빔밥,불고기,떡볶이,김밥,라면,냉면,삼겹살,갈비,잡채,순대,호떡,만두,된장찌개,김치찌개,부대찌개,칼국수,삼계탕,파전,떡국,미역국,족발,보쌈,치킨,빙수,약과,식혜,수정과',
  ),
  t(
    'stage',
    '공연 Stage',
    'text',
    '앵콜,떼창,응원봉,무대,조명,기타 솔로,드럼,박수,환호,커튼콜,안무,하이라이트,셋리스트,인사,관객,포토타임,라이브,발라드,댄스,피아노,코러스,스피커,마이크,무대인사,팬송,엔딩,오프닝,리허설',
  ),
];

export const THEME_IDS = THEMES.map((th) => th.id) as [string, ...string[]];

export function theme(id: string): Theme | undefined {
  return THEMES.find((th) => th.id === id);
}
